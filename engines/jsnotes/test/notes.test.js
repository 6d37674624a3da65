// jsnotes on the test kit: every route, the validation (and the setting that changes it), the
// event, the job, paging across pages, and that a refused request commits nothing.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Context, TestHost } from '../../../sdk/javascript/src/testkit/index.js';
import engine, { wordCount } from '../src/engine.js';

const TENANT = 'tenant-1';
const ada = Context.forTests(TENANT, 'ada', 'editor');

function host() {
  const served = new TestHost(engine);
  served.provisionTenant({ tenantId: TENANT, tenantShortId: 'acme', name: 'Acme' });
  return served;
}

test('the engine describes itself', () => {
  const served = new TestHost(engine);
  assert.deepEqual(served.describe(), {
    code: 'jsnotes',
    name: 'JavaScript notes',
    version: '0.1.0',
    requiresTenantProvision: true,
    requiresUserProvision: false,
    subscriptions: ['entity.created'],
    outboundHosts: [],
  });
  assert.deepEqual(served.guest.describeSettings(), [
    {
      name: 'max-title-length',
      kind: 'integer',
      defaultValue: '200',
      description: 'Longest note title accepted, in characters.',
      secret: false,
    },
  ]);
  assert.deepEqual(served.guest.describePermissions(), []);
});

test('the API description documents every route and passes the host checks', () => {
  const api = new TestHost(engine).api();
  assert.deepEqual(Object.keys(api.paths).sort(), ['/api/v1/notes', '/api/v1/notes/{note_id}', '/api/v1/stats']);
  assert.deepEqual(Object.keys(api.paths['/api/v1/notes']).sort(), ['get', 'post']);
  assert.deepEqual(Object.keys(api.paths['/api/v1/notes/{note_id}']).sort(), ['delete', 'get']);
  for (const name of ['Note', 'NewNote', 'NotePage', 'Stats', 'CursorMeta', 'ValidationErrorBody']) {
    assert.ok(api.components.schemas[name], name);
  }
  const create = api.paths['/api/v1/notes'].post;
  assert.equal(create.operationId, 'post_api_v1_notes');
  assert.equal(create.requestBody.content['application/json'].schema.$ref, '#/components/schemas/NewNote');
  assert.equal(create.responses['201'].content['application/json'].schema.properties.data.$ref, '#/components/schemas/Note');
  assert.deepEqual(
    api.paths['/api/v1/notes'].get.parameters.map((parameter) => parameter.name),
    ['cursor', 'limit'],
  );
});

test('provisioning records the tenant', () => {
  const served = host();
  assert.equal(served.storedJson(TENANT, 'tenant').tenant_short_id, 'acme');
});

test('creating a note stores it, publishes, schedules its word count and counts it, at once', () => {
  const served = host();
  const created = served.post(ada, '/api/v1/notes', { title: 'Groceries', body: 'eggs  milk\nbread', colour: 'ignored' });
  assert.equal(created.status, 201);
  const note = created.json().data;
  assert.deepEqual(Object.keys(note), ['id', 'title', 'body', 'created_by', 'created_at', 'word_count']);
  assert.equal(note.title, 'Groceries');
  assert.equal(note.body, 'eggs  milk\nbread');
  assert.equal(note.created_by, 'ada');
  assert.equal(note.word_count, null);
  assert.match(note.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  assert.deepEqual(served.storedJson(TENANT, `note:${note.id}`), note);
  assert.deepEqual(served.published(), [
    { tenantId: TENANT, eventType: 'jsnotes.note.created', payload: { note_id: note.id, title: 'Groceries' }, actorId: 'ada' },
  ]);
  const [job] = served.jobs();
  assert.deepEqual(JSON.parse(new TextDecoder().decode(job.payload)), { note_id: note.id });
  assert.ok(job.atUnixMs <= Date.now());
  assert.deepEqual(served.get(ada, '/api/v1/stats').json(), { data: { notes_created: 1, entities_seen: 0 } });
  // Without a body, the body is empty.
  assert.equal(served.post(ada, '/api/v1/notes', { title: 'Bare' }).json().data.body, '');
});

test('the job counts the words of the body', () => {
  const served = host();
  const note = served.post(ada, '/api/v1/notes', { title: 'T', body: '  one two\tthree\n four  ' }).json().data;
  const ran = served.runDueJobs();
  assert.deepEqual(ran.map((outcome) => outcome.ok), [true]);
  assert.equal(served.get(ada, `/api/v1/notes/${note.id}`).json().data.word_count, 4);
  assert.deepEqual(served.jobs(), []);
  // A note deleted before its job runs stays deleted; the job succeeds.
  const gone = served.post(ada, '/api/v1/notes', { title: 'Gone', body: 'a b' }).json().data;
  assert.equal(served.delete(ada, `/api/v1/notes/${gone.id}`).status, 204);
  assert.deepEqual(served.runDueJobs().map((outcome) => outcome.ok), [true]);
  assert.equal(served.stored(TENANT, `note:${gone.id}`), undefined);
  assert.equal(wordCount(''), 0);
});

test('validation: title required and bounded, body bounded, strings only', () => {
  const served = host();
  const cases = [
    [{}, { title: ['required'] }],
    [{ title: null }, { title: ['required'] }],
    [{ title: '   ' }, { title: ['required'] }],
    [{ title: 7 }, { title: ['string'] }],
    [{ title: 'x'.repeat(201) }, { title: ['max:200'] }],
    [{ title: 'ok', body: 'x'.repeat(10001) }, { body: ['max:10000'] }],
    [{ title: 'ok', body: ['a'] }, { body: ['string'] }],
    [{ title: 'ok', body: null }, { body: ['string'] }],
    [{ body: 5 }, { body: ['string'], title: ['required'] }],
  ];
  for (const [body, errors] of cases) {
    const refused = served.post(ada, '/api/v1/notes', body);
    assert.equal(refused.status, 422, JSON.stringify(body));
    assert.deepEqual(refused.json(), { message: 'The given data was invalid.', errors });
  }
  // Characters, not bytes.
  assert.equal(served.post(ada, '/api/v1/notes', { title: 'é'.repeat(200) }).status, 201);
  assert.equal(served.post(ada, '/api/v1/notes', { title: 'x', body: 'x'.repeat(10000) }).status, 201);
  // Not an object; not JSON.
  assert.deepEqual(served.post(ada, '/api/v1/notes', ['title']).json().errors, { body: ['object'] });
  const malformed = served.request(ada, 'POST', '/api/v1/notes', {
    headers: [['content-type', 'application/json']],
    body: '{"title": ',
  });
  assert.equal(malformed.status, 400);
  assert.match(malformed.json().message, /^Invalid JSON body: /);
});

test('the max-title-length setting changes the limit', () => {
  const served = host();
  served.setSetting('max-title-length', '5');
  assert.deepEqual(served.post(ada, '/api/v1/notes', { title: 'sixsix' }).json().errors, { title: ['max:5'] });
  assert.equal(served.post(ada, '/api/v1/notes', { title: 'five5' }).status, 201);
  served.setSetting('max-title-length', '300');
  assert.equal(served.post(ada, '/api/v1/notes', { title: 'x'.repeat(300) }).status, 201);
});

test('a refused request commits nothing', () => {
  const served = host();
  const before = served.storedKeys(TENANT);
  assert.equal(served.post(ada, '/api/v1/notes', { title: 'x'.repeat(201), body: 'b' }).status, 422);
  assert.deepEqual(served.storedKeys(TENANT), before);
  assert.deepEqual(served.published(), []);
  assert.deepEqual(served.jobs(), []);
  assert.deepEqual(served.get(ada, '/api/v1/stats').json().data, { notes_created: 0, entities_seen: 0 });
});

test('show and delete: 200, 204, then 404', () => {
  const served = host();
  const note = served.post(ada, '/api/v1/notes', { title: 'T' }).json().data;
  const shown = served.get(ada, `/api/v1/notes/${note.id}`);
  assert.deepEqual([shown.status, shown.json()], [200, { data: note }]);
  const deleted = served.delete(ada, `/api/v1/notes/${note.id}`);
  assert.deepEqual([deleted.status, deleted.body.length], [204, 0]);
  assert.deepEqual(served.get(ada, `/api/v1/notes/${note.id}`).json(), { message: 'Note not found.' });
  assert.equal(served.get(ada, `/api/v1/notes/${note.id}`).status, 404);
  assert.equal(served.delete(ada, `/api/v1/notes/${note.id}`).status, 404);
  assert.equal(served.get(ada, '/api/v1/notes/nothing').status, 404);
  const refused = served.request(ada, 'PUT', `/api/v1/notes/${note.id}`);
  assert.deepEqual([refused.status, refused.header('allow')], [405, 'GET, DELETE']);
});

test('the list pages oldest first across pages, without gaps', () => {
  const served = host();
  const titles = Array.from({ length: 7 }, (_, index) => `note ${index}`);
  const ids = titles.map((title) => served.post(ada, '/api/v1/notes', { title }).json().data.id);
  assert.deepEqual([...ids].sort(), ids, 'ids sort by creation');
  const seen = [];
  let cursor;
  let pages = 0;
  for (;;) {
    const query = cursor === undefined ? '?limit=3' : `?limit=3&cursor=${cursor}`;
    const answered = served.get(ada, `/api/v1/notes${query}`);
    assert.equal(answered.status, 200);
    const { data, meta } = answered.json();
    assert.deepEqual(Object.keys(meta), ['next_cursor', 'has_more']);
    seen.push(...data.map((note) => note.title));
    pages += 1;
    cursor = meta.next_cursor;
    if (!meta.has_more) break;
  }
  assert.equal(pages, 3);
  assert.deepEqual(seen, titles);
  // The default page holds them all; an empty list has no cursor.
  assert.equal(served.get(ada, '/api/v1/notes').json().data.length, 7);
  const empty = new TestHost(engine).get(ada, '/api/v1/notes').json();
  assert.deepEqual(empty, { data: [], meta: { next_cursor: null, has_more: false } });
});

test('the list refuses what the kit refuses', () => {
  const served = host();
  assert.deepEqual(served.get(ada, '/api/v1/notes?colour=red').json(), { message: 'Unknown query parameter `colour`.' });
  assert.equal(served.get(ada, '/api/v1/notes?colour=red').status, 400);
  assert.deepEqual(served.get(ada, '/api/v1/notes?limit=0').json().errors, { limit: ['min:1'] });
  assert.deepEqual(served.get(ada, '/api/v1/notes?limit=x').json().errors, { limit: ['integer'] });
  assert.deepEqual(served.get(ada, '/api/v1/notes?cursor=nope!').json().errors, { cursor: ['invalid'] });
  // At most 100 per page.
  for (let index = 0; index < 101; index += 1) served.post(ada, '/api/v1/notes', { title: `n${index}` });
  const page = served.get(ada, '/api/v1/notes?limit=500').json();
  assert.deepEqual([page.data.length, page.meta.has_more], [100, true]);
});

test('entity.created events are counted once per event id', () => {
  const served = host();
  const event = { id: 'evt-1', eventType: 'entity.created', tenantId: TENANT, payload: { entity_id: 'e1' } };
  served.deliver(event);
  served.deliver(event); // a redelivery
  served.deliver({ ...event, id: 'evt-2' });
  served.deliver({ ...event, id: 'evt-3', eventType: 'something.else' });
  assert.deepEqual(served.get(ada, '/api/v1/stats').json().data, { notes_created: 0, entities_seen: 2 });
});

test('tenants do not see each other’s notes', () => {
  const served = host();
  served.post(ada, '/api/v1/notes', { title: 'mine' });
  const bob = Context.forTests('tenant-2', 'bob', 'owner');
  assert.deepEqual(served.get(bob, '/api/v1/notes').json().data, []);
});
