// The kit's wire rules against the host's: the vectors are those of `crates/wire`'s own tests
// and of the Python kit's `tests/test_wire.py`, so a JavaScript engine's cursors, 422s and
// messages are byte for byte a Rust (or Python) engine's.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  CursorMeta,
  CursorPage,
  MESSAGE_INVALID,
  ValidationErrors,
  decodeCursor,
  encodeCursor,
  unknownQueryParameter,
} from '../src/index.js';

function refusal(run) {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ValidationErrors, `expected ValidationErrors, got ${error}`);
    return error.errors();
  }
  assert.fail('expected a refusal');
}

test('cursors are unpadded URL-safe base64 of JSON', () => {
  // JSON `"notes/a"` is 9 bytes: base64 would pad it with `=`.
  assert.equal(encodeCursor('notes/a'), 'Im5vdGVzL2Ei');
  assert.equal(decodeCursor('Im5vdGVzL2Ei'), 'notes/a');
  assert.equal(encodeCursor('k?>'), 'Ims_PiI');
  assert.equal(decodeCursor('Ims_PiI'), 'k?>');
  assert.equal(encodeCursor(7), 'Nw');
  assert.equal(decodeCursor('Nw', 'integer'), 7);
  // Non-ASCII keys are UTF-8 in the JSON, not \u escapes (serde_json's encoding).
  assert.equal(decodeCursor(encodeCursor('notes/é')), 'notes/é');
  assert.equal(encodeCursor('é'), 'IsOpIg');
});

for (const cursor of [
  'not a cursor!',
  'Nw', // valid base64 of something that is not a JSON string
  'Im5vdGVzL2Ei==', // padded base64 is not the encoding
  'Im5vdGVzL2Ei+',
  'Im5vdGVzL2Ej', // non-canonical trailing bits
  'I',
]) {
  test(`a bad cursor is a 422: ${cursor}`, () => {
    assert.deepEqual(
      refusal(() => CursorPage.create(cursor, undefined)),
      { cursor: ['invalid'] },
    );
  });
}

for (const limit of ['x', '-1', '1.5', '', ' 5', '4294967296']) {
  test(`a limit that is no unsigned integer is a 422: ${JSON.stringify(limit)}`, () => {
    assert.deepEqual(
      refusal(() => CursorPage.fromQuery({ limit })),
      { limit: ['integer'] },
    );
  });
}

test('a zero limit is min:1', () => {
  for (const page of [() => CursorPage.create(null, 0), () => CursorPage.fromQuery({ limit: '0' })]) {
    assert.deepEqual(refusal(page), { limit: ['min:1'] });
  }
});

test('limits default and clamp', () => {
  let page = CursorPage.fromQuery({});
  assert.deepEqual([page.after, page.limit], [null, 50]);
  assert.equal(CursorPage.create(null, 500).limit, 100);
  assert.equal(CursorPage.create(null, 500, { defaultLimit: 20, maximum: 30, kind: 'integer' }).limit, 30);
  assert.equal(CursorPage.create(null, undefined, { defaultLimit: 20, maximum: 30, kind: 'integer' }).limit, 20);
  assert.equal(CursorPage.create('', 3).after, null);
  assert.equal(CursorPage.fromQuery({ limit: '+5' }).limit, 5); // as Rust's u32 parser
  page = CursorPage.fromQuery({ cursor: encodeCursor('kv/b'), limit: '2' });
  assert.deepEqual([page.after, page.limit], ['kv/b', 2]);
  assert.equal(page.fetchLimit(), 3);
  // A Map (or the kit's Query) works as well as an object.
  assert.equal(CursorPage.fromQuery(new Map([['limit', '7']])).limit, 7);
});

test('pages walk without gaps', () => {
  const keys = ['kv/a', 'kv/b', 'kv/c', 'kv/d', 'kv/e'];
  const seen = [];
  let cursor = null;
  for (;;) {
    const page = CursorPage.create(cursor, 2);
    const rows = keys.filter((key) => page.after === null || key > page.after).slice(0, page.fetchLimit());
    const { items, meta } = page.finish(rows, (key) => key);
    seen.push(...items);
    cursor = meta.nextCursor;
    if (!meta.hasMore) {
      // The last page ends on the last key.
      assert.equal(cursor, encodeCursor('kv/e'));
      break;
    }
  }
  assert.deepEqual(seen, keys);
});

test('an empty page keeps the request cursor', () => {
  const page = CursorPage.create(encodeCursor('kv/z'), 2);
  assert.deepEqual(page.finish([], (key) => key), { items: [], meta: new CursorMeta(encodeCursor('kv/z'), false) });
  assert.deepEqual(CursorPage.create(null, 2).finish([], (key) => key).meta, new CursorMeta(null, false));
  assert.equal(JSON.stringify(new CursorMeta(null, false)), '{"next_cursor":null,"has_more":false}');
});

test('a page cut by a bounded scan continues after where reading stopped', () => {
  const page = CursorPage.create(null, 2);
  // Stopped before the page was full: what was found, and more to come after the stop.
  let found = page.finishFound([], (key) => key, 'kv/q');
  assert.deepEqual(found, { items: [], meta: new CursorMeta(encodeCursor('kv/q'), true) });
  // A full page (one more than the limit found) ends on its last item as usual.
  found = page.finishFound(['kv/a', 'kv/b', 'kv/c'], (key) => key, undefined);
  assert.deepEqual(found.items, ['kv/a', 'kv/b']);
  assert.equal(found.meta.nextCursor, encodeCursor('kv/b'));
  assert.equal(found.meta.hasMore, true);
  assert.equal(page.finishFound(['kv/a'], (key) => key, undefined).meta.hasMore, false);
});

test('validation errors have the host shape', () => {
  const errors = new ValidationErrors();
  errors.checkLength('', 'title', 1, 200);
  errors.checkLength('x'.repeat(201), 'body', 0, 200);
  errors.required('name', '   ');
  errors.add('title', 'regex');
  assert.deepEqual(errors.body(), {
    message: MESSAGE_INVALID,
    errors: { body: ['max:200'], name: ['required'], title: ['min:1', 'regex'] },
  });
  // Fields sorted as the host sorts them, whatever order they failed in.
  assert.deepEqual(Object.keys(errors.body().errors), ['body', 'name', 'title']);
  assert.equal(MESSAGE_INVALID, 'The given data was invalid.');
  // Lengths are characters, not bytes (nor UTF-16 units).
  assert.ok(new ValidationErrors().checkLength('é'.repeat(200), 'title', 1, 200));
  assert.ok(new ValidationErrors().checkLength('😀'.repeat(200), 'title', 1, 200));
  assert.throws(() => errors.throwIfAny(), ValidationErrors);
  new ValidationErrors().throwIfAny();
  assert.ok(ValidationErrors.single('a', 'b').equals(ValidationErrors.single('a', 'b')));
});

test('text fields of a JSON body: required, string, lengths', () => {
  const errors = new ValidationErrors();
  const document = { title: '  ', body: 7, name: 'x'.repeat(11), note: 'ok', empty: null, gone: null, unset: null };
  assert.equal(errors.stringField(document, 'title', { required: true, max: 10 }), '');
  assert.equal(errors.stringField(document, 'body', { max: 10 }), '');
  assert.equal(errors.stringField(document, 'name', { max: 10 }), '');
  assert.equal(errors.stringField(document, 'note', { required: true, min: 1, max: 10 }), 'ok');
  assert.equal(errors.stringField(document, 'absent'), '');
  assert.equal(errors.stringField(document, 'missing', { required: true }), '');
  // null: required when the field is, allowed when nullable, else not a string (as the schema says).
  assert.equal(errors.stringField(document, 'gone', { required: true }), '');
  assert.equal(errors.stringField(document, 'unset', { nullable: true }), null);
  assert.equal(errors.stringField(document, 'empty'), '');
  assert.deepEqual(errors.errors(), {
    body: ['string'],
    empty: ['string'],
    gone: ['required'],
    missing: ['required'],
    name: ['max:10'],
    title: ['required'],
  });
});

test('unknown parameters are named in backticks', () => {
  assert.equal(unknownQueryParameter('colour'), 'Unknown query parameter `colour`.');
});
