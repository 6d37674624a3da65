// The API description against the Rust SDK's (`engines/sdk/src/openapi.rs`) and the host's
// rules (`crates/runtime/src/api_description.rs`, checked by the test kit's
// `checkApiDescription`).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Operation, PAGE_QUERY, Response, Router, operationId } from '../src/index.js';
import { checkApiDescription } from '../src/testkit/index.js';

const schemas = {
  Note: {
    type: 'object',
    required: ['id', 'title'],
    properties: { id: { type: 'string' }, title: { type: 'string' } },
  },
  NewNote: {
    type: 'object',
    required: ['title'],
    properties: { title: { type: 'string', minLength: 1, maxLength: 200 } },
  },
};

const ok = () => Response.noContent();

function router() {
  return new Router()
    .get('/api/v1/notes', ok)
    .doc(new Operation('List notes').query(PAGE_QUERY).page('Note'))
    .post('/api/v1/notes', ok)
    .doc(new Operation('Create a note').body('NewNote').created('Note').invalid('`title` is required'))
    .get('/api/v1/notes/{note_id}', ok)
    .doc(new Operation('Show a note').pathParameter('note_id', 'The note').ok('Note'))
    .delete('/api/v1/notes/{note_id}', ok)
    .doc(new Operation('Delete a note').noContent().error(409, 'The note is locked'))
    .get('/api/v1/undocumented', ok);
}

test('each route is documented once, with envelopes and references', () => {
  const document = router().openapi(schemas);
  assert.equal(document.openapi, '3.1.0');
  const create = document.paths['/api/v1/notes'].post;
  assert.equal(create.operationId, 'post_api_v1_notes');
  assert.equal(create.summary, 'Create a note');
  assert.deepEqual(create.requestBody, {
    required: true,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/NewNote' } } },
  });
  assert.deepEqual(create.responses['201'].content['application/json'].schema, {
    type: 'object',
    required: ['data'],
    properties: { data: { $ref: '#/components/schemas/Note' } },
  });
  assert.equal(create.responses['422'].description, '`title` is required');
  assert.equal(create.responses['422'].content['application/json'].schema.$ref, '#/components/schemas/ValidationErrorBody');
  const list = document.paths['/api/v1/notes'].get;
  const page = list.responses['200'].content['application/json'].schema;
  assert.deepEqual(page.required, ['data', 'meta']);
  assert.deepEqual(page.properties.data, { type: 'array', items: { $ref: '#/components/schemas/Note' } });
  assert.deepEqual(page.properties.meta, { $ref: '#/components/schemas/CursorMeta' });
  assert.deepEqual(
    list.parameters.map((parameter) => [parameter.name, parameter.in, parameter.required, parameter.schema.type]),
    [
      ['cursor', 'query', false, 'string'],
      ['limit', 'query', false, 'integer'],
    ],
  );
  assert.ok(list.parameters[0].description);
  // The kit's schemas join the engine's when referred to.
  assert.deepEqual(Object.keys(document.components.schemas).sort(), ['CursorMeta', 'NewNote', 'Note', 'ValidationErrorBody']);
});

test('path parameters are required strings, described when asked', () => {
  const document = router().openapi(schemas);
  const show = document.paths['/api/v1/notes/{note_id}'].get;
  assert.equal(show.operationId, 'get_api_v1_notes_note_id');
  assert.deepEqual(show.parameters, [
    { name: 'note_id', in: 'path', required: true, schema: { type: 'string', minLength: 1 }, description: 'The note' },
  ]);
  assert.deepEqual(document.paths['/api/v1/notes/{note_id}'].delete.parameters[0].schema, { type: 'string', minLength: 1 });
});

test('every operation gets the errors the kit answers, unless it describes them', () => {
  const document = router().openapi(schemas);
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      for (const status of ['400', '403', '404', '422']) assert.ok(operation.responses[status], status);
      // The host adds its own.
      assert.equal(operation.responses['401'], undefined);
    }
  }
  const remove = document.paths['/api/v1/notes/{note_id}'].delete;
  assert.deepEqual(remove.responses['204'], { description: 'Done; no body' });
  assert.equal(remove.responses['404'].content['application/json'].schema.$ref, '#/components/schemas/ErrorBody');
  assert.equal(remove.responses['409'].content['application/json'].schema.$ref, '#/components/schemas/ErrorBody');
  // An undocumented route still has an operation, answering "default".
  const bare = document.paths['/api/v1/undocumented'].get;
  assert.equal(bare.summary, 'GET /api/v1/undocumented');
  assert.ok(bare.responses.default);
});

test('the description passes the host checks', () => {
  checkApiDescription(JSON.stringify(router().openapi(schemas)));
});

test('a reference to a schema defined nowhere fails at once', () => {
  const routes = new Router().get('/api/v1/x', ok).doc(new Operation('X').ok('Missing'));
  assert.throws(() => routes.openapi({}), /Missing/);
});

test('the host checks refuse what the host refuses', () => {
  const good = JSON.stringify(router().openapi(schemas));
  const cases = {
    'not JSON': '{',
    'not an object': '[]',
    'unrouted path': JSON.stringify({ paths: { '/internal/x': { get: { responses: {} } } } }),
    'escaping path': JSON.stringify({ paths: { '/api/v1/../x': { get: { responses: {} } } } }),
    'no responses': JSON.stringify({ paths: { '/api/v1/x': { get: {} } } }),
    'other key': JSON.stringify({ paths: { '/api/v1/x': { head: { responses: {} } } } }),
    'foreign reference': JSON.stringify({
      paths: { '/api/v1/x': { get: { responses: { 200: { $ref: 'https://example.com/x.json' } } } } },
    }),
    'bad schema name': JSON.stringify({ components: { schemas: { 'a b': {} } } }),
  };
  for (const [name, text] of Object.entries(cases)) assert.throws(() => checkApiDescription(text), Error, name);
  checkApiDescription(good);
  checkApiDescription('{}');
});

test('operation ids are the method and the segments', () => {
  assert.equal(operationId('GET', '/api/v1/notes/{id}'), 'get_api_v1_notes_id');
  assert.equal(operationId('PATCH', '/api/v1/a-b/{c.d}'), 'patch_api_v1_a_b_c_d');
});

test('bodies and answers of other kinds', () => {
  const routes = new Router()
    .put('/api/v1/files/{name}', ok)
    .doc(
      new Operation('Upload')
        .description('Stores the bytes.')
        .binaryBody('application/octet-stream')
        .answersBinary(200, 'The bytes', 'application/octet-stream')
        .accepted({ type: 'string' })
        .answersBare(299, 'Bare', 'Note')
        .query({ type: 'object', required: ['mode'], properties: { mode: { type: ['string', 'null'], enum: ['a', null] } } }),
    );
  const upload = routes.openapi(schemas).paths['/api/v1/files/{name}'].put;
  assert.equal(upload.description, 'Stores the bytes.');
  assert.deepEqual(upload.requestBody.content, {
    'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
  });
  assert.deepEqual(upload.responses['202'].content['application/json'].schema.properties.data, { type: 'string' });
  assert.deepEqual(upload.responses['299'].content['application/json'].schema, { $ref: '#/components/schemas/Note' });
  // A query parameter is absent rather than null.
  assert.deepEqual(upload.parameters[1], { name: 'mode', in: 'query', required: true, schema: { type: 'string', enum: ['a'] } });
});

test('an audited operation carries its event name, and only it', () => {
  const document = new Router()
    .delete('/api/v1/notes/{note_id}', ok)
    .doc(new Operation('Delete a note').noContent().audited('note.deleted'))
    .get('/api/v1/notes', ok)
    .doc(new Operation('List notes'))
    .openapi({});
  assert.equal(document.paths['/api/v1/notes/{note_id}'].delete['x-tessera-audit'], 'note.deleted');
  assert.equal(document.paths['/api/v1/notes'].get['x-tessera-audit'], undefined);
});
