// `@tessera/engine`: the JavaScript guest kit of Tessera engines (componentize-js components of
// the world `tessera:engine/engine@0.3.0`). The wire rules, responses and router, requests, the
// API description, the typed host imports and the glue to the `guest` export; the test kit is
// `@tessera/engine/testkit`, the component entry's import `@tessera/engine/component`.

export { bytesEqual, compareCodePoints, toBytes, utf8Decode, utf8Encode } from './bytes.js';
export { Context } from './context.js';
export { percentDecode } from './decoding.js';
export { DEFAULT_HOOKS, Event, Job, defineEngine, exportGuest } from './guest.js';
export {
  DEFAULT_SCAN_LIMITS,
  DEFAULT_TIMEOUT_MS,
  HostError,
  Transaction,
  blobs,
  decodeJson,
  events,
  log,
  mailTransport,
  outboundHttp,
  realtime,
  scheduler,
  settings,
  storage,
  vault,
} from './host.js';
export { Response, Router } from './http.js';
export { KIT_SCHEMAS, Operation, PAGE_QUERY, STANDARD_ERRORS, operationId, ref } from './openapi.js';
export { ApiError, Query, Request, isJsonContentType } from './request.js';
export { TENANT_KEY, forgetUser, recordTenant, recordUser, tenantRecord, userKey, userRecord } from './tenancy.js';
export { formatRfc3339, newId, nowRfc3339, nowUnixMs, sortableId } from './time.js';
export {
  CursorMeta,
  CursorPage,
  DEFAULT_LIMIT,
  MAX_LIMIT,
  MESSAGE_EXPECTED_JSON,
  MESSAGE_FORBIDDEN,
  MESSAGE_INVALID,
  MESSAGE_METHOD_NOT_ALLOWED,
  MESSAGE_PAYLOAD_TOO_LARGE,
  MESSAGE_SERVER_ERROR,
  MESSAGE_TOO_MANY_ATTEMPTS,
  MESSAGE_UNAUTHENTICATED,
  ValidationErrors,
  codePointLength,
  decodeCursor,
  encodeCursor,
  unknownQueryParameter,
} from './wire.js';
