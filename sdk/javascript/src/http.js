// Responses in the host's shapes and the router of a JavaScript engine, as the Rust SDK's
// (`engines/sdk/src/response.rs`, `router.rs`): `{"data": …}` envelopes, `{"message": …}`
// errors, routes matched by path first (the most specific pattern: literals beat captures, from
// the left), then by method, with a 405 listing the path's methods in `Allow`.

import { utf8Decode, utf8Encode, toBytes } from './bytes.js';
import { percentDecode } from './decoding.js';
import { document } from './openapi.js';
import { ApiError } from './request.js';
import { MESSAGE_METHOD_NOT_ALLOWED, MESSAGE_SERVER_ERROR, ValidationErrors } from './wire.js';

const JSON_TYPE = ['content-type', 'application/json'];

/** What a route answers: a status, headers (`[name, value]` pairs) and a body (bytes). */
export class Response {
  constructor(status, headers = [], body = new Uint8Array()) {
    this.status = status;
    this.headers = headers;
    this.body = toBytes(body);
  }

  /** `status` with `value` as the JSON body (compact UTF-8, as serde_json writes it). */
  static json(status, value) {
    let text;
    try {
      text = JSON.stringify(value);
    } catch {
      text = undefined;
    }
    if (text === undefined) return Response.error(500, MESSAGE_SERVER_ERROR);
    return new Response(status, [[...JSON_TYPE]], utf8Encode(text));
  }

  /** 200 `{"data": data}`, with `meta` when given (a cursor-paged list). */
  static ok(data, meta) {
    return Response.json(200, meta === undefined ? { data } : { data, meta });
  }

  /** 201 `{"data": data}`. */
  static created(data) {
    return Response.json(201, { data });
  }

  /** 202 `{"data": data}`. */
  static accepted(data) {
    return Response.json(202, { data });
  }

  /** 204, no body. */
  static noContent() {
    return new Response(204);
  }

  /** `status` with `{"message": message}`. */
  static error(status, message) {
    return Response.json(status, { message });
  }

  /** 422 with the field errors. */
  static invalid(errors) {
    return Response.json(422, errors.body());
  }

  withHeader(name, value) {
    this.headers.push([name, value]);
    return this;
  }

  /** The value of header `name` (case-insensitive), or `undefined`. */
  header(name) {
    const wanted = name.toLowerCase();
    for (const [key, value] of this.headers) if (key.toLowerCase() === wanted) return value;
    return undefined;
  }

  /** The body as text. */
  text() {
    return utf8Decode(this.body);
  }

  /** The body as JSON (`null` when empty or not JSON). */
  json() {
    try {
      return JSON.parse(this.text());
    } catch {
      return null;
    }
  }
}

function split(path) {
  return (path.startsWith('/') ? path.slice(1) : path).split('/');
}

/** Per segment, true for a literal that matched, false for a capture; `null`: no match. */
function specificity(route, path) {
  if (route.segments.length !== path.length) return null;
  const ranks = [];
  for (let index = 0; index < path.length; index += 1) {
    const { capture, text } = route.segments[index];
    if (capture) {
      if (!path[index]) return null;
      ranks.push(false);
    } else if (text === path[index]) {
      ranks.push(true);
    } else {
      return null;
    }
  }
  return ranks;
}

function compareRanks(a, b) {
  for (let index = 0; index < a.length; index += 1) {
    if (a[index] !== b[index]) return a[index] ? 1 : -1;
  }
  return 0;
}

/**
 * Routes `(method, pattern)` to handlers `handler(ctx, request, params) -> Response`; a
 * `ValidationErrors` a handler throws answers 422, an `ApiError` its status and message. Any
 * other exception propagates (the guest glue logs it and answers 500). `doc(operation)` right
 * after a route documents it for the API description.
 */
export class Router {
  constructor() {
    this.routes = [];
  }

  route(method, pattern, handler) {
    const segments = split(pattern).map((segment) =>
      segment.startsWith('{') && segment.endsWith('}')
        ? { capture: true, text: segment.slice(1, -1) }
        : { capture: false, text: segment },
    );
    this.routes.push({ method: method.toUpperCase(), pattern, segments, handler, operation: undefined });
    return this;
  }

  get(pattern, handler) {
    return this.route('GET', pattern, handler);
  }

  post(pattern, handler) {
    return this.route('POST', pattern, handler);
  }

  put(pattern, handler) {
    return this.route('PUT', pattern, handler);
  }

  patch(pattern, handler) {
    return this.route('PATCH', pattern, handler);
  }

  delete(pattern, handler) {
    return this.route('DELETE', pattern, handler);
  }

  /** Documents the route added last (an `Operation`). */
  doc(operation) {
    const last = this.routes[this.routes.length - 1];
    if (!last) throw new Error('doc() documents the route added before it; there is none');
    last.operation = operation;
    return this;
  }

  /**
   * The answer to `method path`: 404 when no pattern matches the path, 405 with `Allow` when
   * one does but not for this method, else the handler's.
   */
  handle(ctx, method, path, request = undefined) {
    const pathSegments = split(path);
    let best = null;
    let candidates = [];
    for (const route of this.routes) {
      const rank = specificity(route, pathSegments);
      if (rank === null) continue;
      const order = best === null ? 1 : compareRanks(rank, best);
      if (order > 0) {
        best = rank;
        candidates = [route];
      } else if (order === 0) {
        candidates.push(route);
      }
    }
    if (candidates.length === 0) return Response.error(404, 'Not found.');
    const wanted = method.toUpperCase();
    const chosen = candidates.find((route) => route.method === wanted);
    if (!chosen) {
      const allowed = [];
      for (const route of candidates) if (!allowed.includes(route.method)) allowed.push(route.method);
      return Response.error(405, MESSAGE_METHOD_NOT_ALLOWED).withHeader('allow', allowed.join(', '));
    }
    const params = {};
    chosen.segments.forEach(({ capture, text }, index) => {
      if (capture) params[text] = percentDecode(pathSegments[index]);
    });
    if (request && typeof request === 'object') request.params = params;
    try {
      return chosen.handler(ctx, request, params);
    } catch (error) {
      if (error instanceof ValidationErrors) return Response.invalid(error);
      if (error instanceof ApiError) return Response.error(error.status, error.message);
      throw error;
    }
  }

  /**
   * The OpenAPI 3.1 fragment of the routes (`describe-api`), with `schemas` (name → JSON
   * Schema) as `components.schemas`.
   */
  openapi(schemas = {}) {
    return document(
      this.routes.map((route) => ({
        method: route.method,
        pattern: route.pattern,
        captures: route.segments.filter((segment) => segment.capture).map((segment) => segment.text),
        operation: route.operation,
      })),
      schemas,
    );
  }
}
