// The kit's router and responses against the Rust SDK's behaviour (`engines/sdk/src/router.rs`
// and `response.rs` tests), ported from the Python kit's `tests/test_http.py`: the same
// envelopes, the most specific route, 404s and 405s with `Allow`, percent-decoded parameters,
// 422s from thrown errors.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { CursorMeta, Response, Router, ValidationErrors, percentDecode, utf8Encode } from '../src/index.js';

function body(response) {
  return JSON.parse(new TextDecoder().decode(response.body));
}

function answer(route, params) {
  return Response.ok({ route, params });
}

function router() {
  return new Router()
    .get('/api/v1/notes', (ctx, request, params) => answer('list', params))
    .post('/api/v1/notes', (ctx, request, params) => answer('create', params))
    .get('/api/v1/notes/{id}', (ctx, request, params) => answer('show', params))
    .get('/api/v1/notes/pinned', (ctx, request, params) => answer('pinned', params))
    .delete('/api/v1/notes/{id}', (ctx, request, params) => answer('delete', params))
    .get('/api/v1/{kind}/special', (ctx, request, params) => answer('special', params));
}

test("envelopes are the host's", () => {
  assert.deepEqual(body(Response.ok([1])), { data: [1] });
  assert.deepEqual(body(Response.ok([], new CursorMeta(null, false))), {
    data: [],
    meta: { next_cursor: null, has_more: false },
  });
  assert.equal(Response.created({ id: 'x' }).status, 201);
  assert.equal(Response.noContent().body.length, 0);
  assert.deepEqual(body(Response.error(404, 'Not found.')), { message: 'Not found.' });
  assert.ok(Response.ok(1).headers.some(([name, value]) => name === 'content-type' && value === 'application/json'));
  // serde_json's compact UTF-8.
  assert.deepEqual(Response.ok({ title: 'é' }).body, utf8Encode('{"data":{"title":"é"}}'));
  // A value JSON cannot hold is a 500, not a crash.
  assert.equal(Response.ok({ x: 1n }).status, 500);
  assert.equal(Response.json(200, undefined).status, 500);
});

test('the most specific route wins and parameters are decoded', () => {
  const routes = router();
  assert.equal(body(routes.handle(null, 'GET', '/api/v1/notes/pinned')).data.route, 'pinned');
  const shown = body(routes.handle(null, 'GET', '/api/v1/notes/a%2Fb%20c')).data;
  assert.deepEqual(shown, { route: 'show', params: { id: 'a/b c' } });
  // Literals beat captures from the left.
  assert.equal(body(routes.handle(null, 'GET', '/api/v1/notes/special')).data.route, 'show');
});

test('unknown paths are 404 and other methods 405 with allow', () => {
  const routes = router();
  assert.equal(routes.handle(null, 'GET', '/api/v1/nothing').status, 404);
  assert.equal(routes.handle(null, 'GET', '/api/v1/notes/').status, 404, 'an empty capture');
  const refused = routes.handle(null, 'PUT', '/api/v1/notes/n1');
  assert.equal(refused.status, 405);
  assert.equal(refused.header('allow'), 'GET, DELETE');
  assert.deepEqual(body(refused), { message: 'Method not allowed.' });
});

test('a thrown validation error is a 422', () => {
  function create() {
    const errors = new ValidationErrors();
    errors.required('title', '');
    errors.throwIfAny();
    return Response.created({});
  }
  const answered = new Router().post('/api/v1/notes', create).handle(null, 'POST', '/api/v1/notes');
  assert.equal(answered.status, 422);
  assert.deepEqual(body(answered), { message: 'The given data was invalid.', errors: { title: ['required'] } });
});

test('other exceptions propagate to the guest glue', () => {
  const routes = new Router().get('/api/v1/boom', () => {
    throw new TypeError('boom');
  });
  assert.throws(() => routes.handle(null, 'GET', '/api/v1/boom'), TypeError);
});

test('percent-decoding keeps what is not an escape', () => {
  assert.equal(percentDecode('100%'), '100%');
  assert.equal(percentDecode('%zz%41'), '%zzA');
  assert.equal(percentDecode('a+b'), 'a+b');
  assert.equal(percentDecode('a+b', true), 'a b');
  assert.equal(percentDecode('%C3%A9'), 'é');
  assert.equal(percentDecode('%FF'), '\ufffd');
});
