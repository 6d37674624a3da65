// The engine's API description (`describe-api`): an OpenAPI 3.1 fragment generated from the
// router's routes, each documented once with an `Operation` (as the Rust SDK's
// `engines/sdk/src/openapi.rs`). Schemas are plain JSON Schema objects the engine names in
// `components.schemas` (`schemas: {Note: {...}}`); an operation names one (`'Note'`, a `$ref`)
// or gives one inline (`{type: 'string'}`).
//
// Paths are relative to the engine's prefix and schemas keep their plain names; the host
// prefixes both (`/notes/api/v1/notes`, `notes.Note`) and merges the fragment into its
// `/api/openapi.json`. The kit adds the errors an engine answers to every operation (400, 403,
// 404, 422) unless it describes them itself; the host adds its own (401, 413, 429, 502, 503,
// 504) and its `ErrorBody`, the `{"message"}` body every operation may `$ref`.

const SCHEMAS = '#/components/schemas/';

/** The error answers the kit adds to every operation that does not describe them. */
export const STANDARD_ERRORS = [
  [400, 'Malformed request: an unknown query parameter, or a body that is not JSON'],
  [403, 'The caller may not do this'],
  [404, 'No such resource'],
  [422, 'The given data was invalid'],
];

/** Schemas of the kit, added to `components.schemas` when an operation refers to them. */
export const KIT_SCHEMAS = {
  ValidationErrorBody: {
    description: 'The body of a 422: the message and, per field, the rules it broke.',
    type: 'object',
    required: ['message', 'errors'],
    properties: {
      message: { description: '`The given data was invalid.`', type: 'string' },
      errors: {
        description: 'The rules each field broke, e.g. `{"title": ["required"]}`.',
        type: 'object',
        additionalProperties: { type: 'array', items: { type: 'string' } },
      },
    },
  },
  CursorMeta: {
    description: '`meta` of a cursor-paged list.',
    type: 'object',
    required: ['next_cursor', 'has_more'],
    properties: {
      next_cursor: {
        description:
          'Pass as `cursor` to continue after the last item returned; null only when nothing was returned and no cursor was given.',
        type: ['string', 'null'],
      },
      has_more: { description: 'Whether more items follow.', type: 'boolean' },
    },
  },
};

/** The query of a cursor-paged list (`cursor`, `limit`), for `Operation.query`. */
export const PAGE_QUERY = {
  type: 'object',
  properties: {
    cursor: {
      description: 'The `next_cursor` of the previous page; absent for the first page.',
      type: 'string',
    },
    limit: {
      description: 'How many items: 50 when absent, at most 100.',
      type: 'integer',
      minimum: 1,
    },
  },
};

/** `{$ref}` to the schema `name` of `components.schemas`. */
export function ref(name) {
  return { $ref: `${SCHEMAS}${name}` };
}

/** A schema given by name (`'Note'`: a `$ref`) or inline (an object), copied. */
function schemaOf(schema) {
  if (typeof schema === 'string') return ref(schema);
  if (schema && typeof schema === 'object') return structuredCopy(schema);
  throw new TypeError('a schema is a name of components.schemas or a JSON Schema object');
}

function structuredCopy(value) {
  return JSON.parse(JSON.stringify(value));
}

/**
 * The documentation of one route: what it does, what it reads (query, body) and what it
 * answers. Attach it with `router.doc(operation)` right after the route. Methods chain.
 */
export class Operation {
  constructor(summary) {
    this.summary = summary;
    this.text = undefined;
    this.querySchema = undefined;
    this.requestBody = undefined;
    this.answerList = [];
    this.pathDescriptions = [];
    this.auditName = undefined;
  }

  /**
   * An audited operation: answered with a success, the host records `<code>.<name>` in the
   * tenant's audit trail (written as `x-tessera-audit`; `name` is lower-case letters, digits and
   * `_` in dot-separated words, e.g. `note.deleted`).
   */
  audited(name) {
    this.auditName = name;
    return this;
  }

  /** A longer description (Markdown). */
  description(text) {
    this.text = text;
    return this;
  }

  /** Describes the path parameter `name` (each `{name}` is documented as a required string). */
  pathParameter(name, description) {
    this.pathDescriptions.push([name, description]);
    return this;
  }

  /**
   * The query parameters: each property of the object schema (inline, or a name of
   * `components.schemas`) is one, required when the schema requires it. `PAGE_QUERY` is a
   * paged list's.
   */
  query(schema) {
    this.querySchema = schema;
    return this;
  }

  /** A required JSON request body. */
  body(schema) {
    this.requestBody = { schema, required: true };
    return this;
  }

  /** An optional JSON request body. */
  optionalBody(schema) {
    this.requestBody = { schema, required: false };
    return this;
  }

  /** A required request body of raw bytes of `mediaType`. */
  binaryBody(mediaType) {
    this.requestBody = { binary: mediaType, required: true };
    return this;
  }

  /** A request body of raw bytes of `mediaType` that may be empty or absent. */
  optionalBinaryBody(mediaType) {
    this.requestBody = { binary: mediaType, required: false };
    return this;
  }

  answer(status, description, schema, envelope) {
    this.answerList.push({ status, description, schema, envelope });
    return this;
  }

  /** The 422 answer, described (which fields, which rules), with the validation error body. */
  invalid(description) {
    return this.answer(422, description, 'ValidationErrorBody', 'bare');
  }

  /** 200 `{"data": T}`. */
  ok(schema) {
    return this.answer(200, 'OK', schema, 'data');
  }

  /** 200 `{"data": [T], "meta": {next_cursor, has_more}}`, a cursor-paged list. */
  page(schema) {
    return this.answer(200, 'One page of the list', schema, 'page');
  }

  /** 201 `{"data": T}`. */
  created(schema) {
    return this.answer(201, 'Created', schema, 'data');
  }

  /** 202 `{"data": T}`. */
  accepted(schema) {
    return this.answer(202, 'Accepted', schema, 'data');
  }

  /** 204, no body. */
  noContent() {
    return this.answer(204, 'Done; no body', undefined, undefined);
  }

  /** Another answer: `status` with `{"data": T}`. */
  answers(status, description, schema) {
    return this.answer(status, description, schema, 'data');
  }

  /** Another answer: `status` with `T` as the whole body (not in `{"data": …}`). */
  answersBare(status, description, schema) {
    return this.answer(status, description, schema, 'bare');
  }

  /** Another answer: `status` with raw bytes of `mediaType` (a file's content). */
  answersBinary(status, description, mediaType) {
    this.answerList.push({ status, description, binary: mediaType });
    return this;
  }

  /** Another answer: `status` with the error body `{"message"}`, described (e.g. 409). */
  error(status, description) {
    return this.answer(status, description, 'ErrorBody', 'bare');
  }
}

/** `get_api_v1_notes_id`: the method and the pattern's segments. */
export function operationId(method, pattern) {
  let id = method.toLowerCase();
  for (const segment of pattern.split('/')) {
    if (!segment) continue;
    id += '_';
    for (const char of segment) {
      if (char === '{' || char === '}') continue;
      id += /^[A-Za-z0-9]$/.test(char) ? char : '_';
    }
  }
  return id;
}

/** `schema` without its `null` alternative: a query parameter is absent rather than null. */
function withoutNull(schema) {
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((kind) => kind !== 'null');
    schema.type = types.length === 1 ? types[0] : types;
    if (Array.isArray(schema.enum)) schema.enum = schema.enum.filter((value) => value !== null);
    return schema;
  }
  if (Array.isArray(schema.anyOf)) {
    const rest = schema.anyOf.filter((alternative) => alternative?.type !== 'null');
    if (rest.length === 1) {
      const inner = { ...rest[0] };
      if (schema.description !== undefined) inner.description = schema.description;
      return inner;
    }
  }
  return schema;
}

function queryParameters(query, schemas) {
  let resolved = schemaOf(query);
  if (resolved.$ref) {
    const name = resolved.$ref.slice(SCHEMAS.length);
    if (!schemas[name]) throw new Error(`the query schema ${name} is not in schemas`);
    resolved = structuredCopy(schemas[name]);
  }
  const required = Array.isArray(resolved.required) ? resolved.required : [];
  return Object.entries(resolved.properties ?? {}).map(([name, property]) => {
    const schema = withoutNull(structuredCopy(property));
    const description = schema.description;
    delete schema.description;
    const parameter = { name, in: 'query', required: required.includes(name), schema };
    if (description !== undefined) parameter.description = description;
    return parameter;
  });
}

function describe(route, schemas) {
  const operation = route.operation ?? new Operation(`${route.method} ${route.pattern}`);
  const object = { operationId: operationId(route.method, route.pattern), summary: operation.summary };
  if (operation.text !== undefined) object.description = operation.text;
  if (operation.auditName !== undefined) object['x-tessera-audit'] = operation.auditName;
  const parameters = route.captures.map((name) => {
    const parameter = { name, in: 'path', required: true, schema: { type: 'string', minLength: 1 } };
    const described = operation.pathDescriptions.find(([parameterName]) => parameterName === name);
    if (described) parameter.description = described[1];
    return parameter;
  });
  if (operation.querySchema !== undefined) parameters.push(...queryParameters(operation.querySchema, schemas));
  if (parameters.length > 0) object.parameters = parameters;
  if (operation.requestBody) {
    const { schema, binary, required } = operation.requestBody;
    const content = binary
      ? { [binary]: { schema: { type: 'string', format: 'binary' } } }
      : { 'application/json': { schema: schemaOf(schema) } };
    object.requestBody = { required, content };
  }
  const responses = {};
  if (operation.answerList.length === 0) responses.default = { description: "The engine's answer" };
  for (const answer of operation.answerList) {
    const response = { description: answer.description };
    if (answer.binary) {
      response.content = { [answer.binary]: { schema: { type: 'string', format: 'binary' } } };
    } else if (answer.schema !== undefined) {
      const schema = schemaOf(answer.schema);
      let body = schema;
      if (answer.envelope === 'data') {
        body = { type: 'object', required: ['data'], properties: { data: schema } };
      } else if (answer.envelope === 'page') {
        body = {
          type: 'object',
          required: ['data', 'meta'],
          properties: { data: { type: 'array', items: schema }, meta: ref('CursorMeta') },
        };
      }
      response.content = { 'application/json': { schema: body } };
    }
    responses[String(answer.status)] = response;
  }
  for (const [status, description] of STANDARD_ERRORS) {
    if (responses[String(status)]) continue;
    responses[String(status)] = {
      description,
      content: { 'application/json': { schema: ref(status === 422 ? 'ValidationErrorBody' : 'ErrorBody') } },
    };
  }
  object.responses = responses;
  return object;
}

function collectReferences(value, into) {
  if (Array.isArray(value)) {
    for (const item of value) collectReferences(item, into);
  } else if (value && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref') into.push(child);
      else collectReferences(child, into);
    }
  }
  return into;
}

/**
 * The OpenAPI 3.1 fragment of `routes` (`{method, pattern, captures, operation}`), with the
 * engine's `schemas` and the kit's schemas it refers to in `components.schemas`. Throws when an
 * operation refers to a schema that is defined nowhere (the host would refuse the engine).
 */
export function document(routes, schemas = {}) {
  const paths = {};
  for (const route of routes) {
    paths[route.pattern] ??= {};
    paths[route.pattern][route.method.toLowerCase()] = describe(route, schemas);
  }
  const components = structuredCopy(schemas);
  // The kit's schemas an operation or schema refers to (and those they refer to).
  let added = true;
  while (added) {
    added = false;
    for (const reference of collectReferences([paths, components], [])) {
      const name = typeof reference === 'string' && reference.startsWith(SCHEMAS) ? reference.slice(SCHEMAS.length) : undefined;
      if (name && !components[name] && KIT_SCHEMAS[name]) {
        components[name] = structuredCopy(KIT_SCHEMAS[name]);
        added = true;
      }
    }
  }
  for (const reference of collectReferences([paths, components], [])) {
    const name = typeof reference === 'string' && reference.startsWith(SCHEMAS) ? reference.slice(SCHEMAS.length) : undefined;
    if (name === undefined) throw new Error(`the reference ${JSON.stringify(reference)} does not point at ${SCHEMAS}`);
    if (name !== 'ErrorBody' && !components[name]) {
      throw new Error(`the reference ${reference} names no schema of the engine (give it in schemas)`);
    }
  }
  return { openapi: '3.1.0', paths, components: { schemas: components } };
}
