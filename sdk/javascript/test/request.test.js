// The kit's requests and refusals against the Rust SDK's (`engines/sdk/src/request.rs` and
// `error.rs` tests, `crates/wire/src/json.rs`), ported from the Python kit's
// `tests/test_request.py`: query decoding and refusals, the JSON body's 400s and 422s, and
// `ApiError`s answered in the host's shape through the router.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ApiError, Request, Response, Router, ValidationErrors, isJsonContentType } from '../src/index.js';

function refused(run) {
  try {
    run();
  } catch (error) {
    return error;
  }
  assert.fail('expected a refusal');
}

test('the query is form-decoded and the last value wins', () => {
  const request = new Request('get', '/api/v1/notes', 'tag=a%20b&tag=c+d&pinned=true&empty');
  assert.equal(request.method, 'GET');
  const query = request.query(['tag', 'pinned', 'empty']);
  assert.equal(query.get('tag'), 'c d');
  assert.equal(query.getBool('pinned'), true);
  assert.equal(query.get('empty'), '');
  assert.equal(query.get('missing'), undefined);
});

test('an unknown parameter is a 400 naming it', () => {
  const error = refused(() => new Request('GET', '/api/v1/notes', 'limit=2&colour=red').query(['limit']));
  assert.ok(error instanceof ApiError);
  assert.deepEqual([error.status, error.message], [400, 'Unknown query parameter `colour`.']);
});

test('typed parameters fail as 422s', () => {
  const query = new Request('GET', '/', 'n=12&bad=1.5&yes=1&no=0&maybe=yes&big=4294967296').queryUnchecked();
  assert.equal(query.getU32('n'), 12);
  assert.equal(query.getU64('big'), 4294967296n);
  for (const [name, getter, rule] of [
    ['bad', (n) => query.getU32(n), 'integer'],
    ['big', (n) => query.getU32(n), 'integer'],
    ['maybe', (n) => query.getBool(n), 'boolean'],
  ]) {
    const error = refused(() => getter(name));
    assert.ok(error instanceof ValidationErrors);
    assert.ok(error.equals(ValidationErrors.single(name, rule)));
  }
  assert.deepEqual([query.getBool('yes'), query.getBool('no')], [true, false]);
});

for (const [contentType, accepted] of [
  ['application/json', true],
  ['Application/JSON; charset=utf-8', true],
  ['application/merge-patch+json', true],
  ['text/plain', false],
  ['application/jsonx', false],
]) {
  test(`JSON content type ${contentType}`, () => {
    assert.equal(isJsonContentType(contentType), accepted);
  });
}

test('bodies of another type or malformed are 400s and a non-object a 422', () => {
  const plain = new Request('POST', '/', '', [['content-type', 'text/plain']], '{}');
  let error = refused(() => plain.json());
  assert.equal(error.status, 400);
  assert.equal(error.message, 'Expected a JSON body with Content-Type: application/json.');
  error = refused(() => new Request('POST', '/', '', [], '{"title": ').json());
  assert.equal(error.status, 400);
  assert.ok(error.message.startsWith('Invalid JSON body: '), error.message);
  error = refused(() => new Request('POST', '/', '', [], '[1, 2]').jsonObject());
  assert.ok(error.equals(ValidationErrors.single('body', 'object')));
  assert.deepEqual(new Request('POST', '/', '', [], ' {"a": 1}').jsonObject(), { a: 1 });
  // Invalid UTF-8 is malformed too.
  error = refused(() => new Request('POST', '/', '', [], new Uint8Array([0x22, 0xff, 0x22])).json());
  assert.equal(error.status, 400);
});

test('refusals thrown by handlers answer in the host shape', () => {
  function show(ctx, request, params) {
    if (params.id === 'secret') throw ApiError.forbidden();
    throw ApiError.notFound('Note');
  }
  const routes = new Router().get('/api/v1/notes/{id}', show);
  const forbidden = routes.handle(null, 'GET', '/api/v1/notes/secret');
  assert.equal(forbidden.status, 403);
  assert.deepEqual(forbidden.json(), { message: 'This action is unauthorized.' });
  const missing = routes.handle(null, 'GET', '/api/v1/notes/n1');
  assert.deepEqual([missing.status, missing.json()], [404, { message: 'Note not found.' }]);
  assert.ok(missing instanceof Response);
});

test('the router gives the request its path parameters', () => {
  const routes = new Router().get('/api/v1/notes/{id}', (ctx, request) => Response.ok(request.param('id')));
  const request = new Request('GET', '/api/v1/notes/a%20b');
  assert.deepEqual(routes.handle(null, request.method, request.path, request).json(), { data: 'a b' });
});
