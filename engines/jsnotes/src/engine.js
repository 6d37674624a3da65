// jsnotes: the example engine of the JavaScript kit. Notes with a title and a body, kept under
// `note:<id>` (ids sort by creation time, so a scan lists them oldest first); creating one
// publishes `jsnotes.note.created`, schedules a job that counts the body's words, and counts
// the note, all in the request's unit of work. It counts the `entity.created` events it is
// delivered, once per event id. The Python example `pynotes` behaves the same.

import {
  ApiError,
  CursorPage,
  Operation,
  PAGE_QUERY,
  Response,
  Router,
  Transaction,
  ValidationErrors,
  events,
  nowRfc3339,
  nowUnixMs,
  settings,
  sortableId,
  storage,
} from './kit.js';

const NOTE = 'note:';
const NOTES_CREATED = 'stats:notes_created';
const ENTITIES_SEEN = 'stats:entities_seen';
const MAX_TITLE_LENGTH = 'max-title-length';
const DEFAULT_MAX_TITLE_LENGTH = 200;
const MAX_BODY_LENGTH = 10000;

function noteKey(id) {
  return `${NOTE}${id}`;
}

function maxTitleLength() {
  return settings.integer(MAX_TITLE_LENGTH, DEFAULT_MAX_TITLE_LENGTH);
}

/** The number of whitespace-separated words of `text`. */
export function wordCount(text) {
  return text.split(/\s+/).filter((word) => word.length > 0).length;
}

function list(ctx, request) {
  const page = CursorPage.fromQuery(request.query(['cursor', 'limit']));
  const { items, meta } = storage.pageJson(NOTE, page);
  return Response.ok(
    items.map(([, note]) => note),
    meta,
  );
}

function create(ctx, request) {
  request.query([]);
  const document = request.jsonObject();
  const errors = new ValidationErrors();
  const title = errors.stringField(document, 'title', { required: true, max: maxTitleLength() });
  const body = errors.stringField(document, 'body', { max: MAX_BODY_LENGTH });
  errors.throwIfAny();
  const note = {
    id: sortableId(),
    title,
    body,
    created_by: ctx.userId,
    created_at: nowRfc3339(),
    word_count: null,
  };
  events.publish('jsnotes.note.created', { note_id: note.id, title: note.title });
  // The note, its word-count job and the count commit together with the event, or none does.
  new Transaction()
    .setJson(noteKey(note.id), note)
    .jobJson(nowUnixMs(), { note_id: note.id })
    .add(NOTES_CREATED, 1)
    .commit();
  return Response.created(note);
}

function show(ctx, request, params) {
  request.query([]);
  const note = storage.getJson(noteKey(params.note_id));
  if (note === undefined) throw ApiError.notFound('Note');
  return Response.ok(note);
}

function destroy(ctx, request, params) {
  request.query([]);
  if (!storage.delete(noteKey(params.note_id))) throw ApiError.notFound('Note');
  return Response.noContent();
}

function stats(ctx, request) {
  request.query([]);
  return Response.ok({
    notes_created: storage.counter(NOTES_CREATED),
    entities_seen: storage.counter(ENTITIES_SEEN),
  });
}

const NOTE_ID = 'The note’s id.';

const router = new Router()
  .get('/api/v1/notes', list)
  .doc(
    new Operation('List notes')
      .description('Oldest first, cursor-paged.')
      .query(PAGE_QUERY)
      .answersBare(200, 'One page of the notes', 'NotePage'),
  )
  .post('/api/v1/notes', create)
  .doc(
    new Operation('Create a note')
      .description(
        'Publishes `jsnotes.note.created` and schedules the count of the body’s words (`word_count`, null until then).',
      )
      .body('NewNote')
      .created('Note')
      .invalid('`title` is required and at most `max-title-length` characters; `body` at most 10000'),
  )
  .get('/api/v1/notes/{note_id}', show)
  .doc(new Operation('Show a note').pathParameter('note_id', NOTE_ID).ok('Note'))
  .delete('/api/v1/notes/{note_id}', destroy)
  .doc(new Operation('Delete a note').pathParameter('note_id', NOTE_ID).noContent().audited('note.deleted'))
  .get('/api/v1/stats', stats)
  .doc(new Operation('Count the notes created and the entities seen').ok('Stats'));

const schemas = {
  Note: {
    description: 'A note.',
    type: 'object',
    required: ['id', 'title', 'body', 'created_by', 'created_at', 'word_count'],
    properties: {
      id: { description: 'Sorts by creation time.', type: 'string' },
      title: { type: 'string' },
      body: { type: 'string' },
      created_by: { description: 'The user who created it.', type: 'string' },
      created_at: { description: 'RFC 3339 UTC.', type: 'string', format: 'date-time' },
      word_count: {
        description: 'The words of the body; null until the job that counts them has run.',
        type: ['integer', 'null'],
        minimum: 0,
      },
    },
  },
  NewNote: {
    description: '`POST /api/v1/notes`; other fields are ignored.',
    type: 'object',
    required: ['title'],
    properties: {
      title: {
        description: "Not blank; at most `max-title-length` characters (the operator's setting, 200 by default).",
        type: 'string',
        minLength: 1,
        maxLength: DEFAULT_MAX_TITLE_LENGTH,
        pattern: '\\S',
      },
      body: { description: 'Empty when absent.', type: 'string', maxLength: MAX_BODY_LENGTH },
    },
  },
  NotePage: {
    description: 'One page of notes.',
    type: 'object',
    required: ['data', 'meta'],
    properties: {
      data: { type: 'array', items: { $ref: '#/components/schemas/Note' } },
      meta: { $ref: '#/components/schemas/CursorMeta' },
    },
  },
  Stats: {
    type: 'object',
    required: ['notes_created', 'entities_seen'],
    properties: {
      notes_created: { description: 'Notes created so far (deleted ones too).', type: 'integer' },
      entities_seen: { description: '`entity.created` events delivered, each counted once.', type: 'integer' },
    },
  },
};

export default {
  descriptor: {
    code: 'jsnotes',
    name: 'JavaScript notes',
    version: '0.1.0',
    requiresTenantProvision: true,
    requiresUserProvision: false,
    subscriptions: ['entity.created'],
    outboundHosts: [],
  },
  router,
  schemas,
  settings: [
    {
      name: MAX_TITLE_LENGTH,
      kind: 'integer',
      defaultValue: String(DEFAULT_MAX_TITLE_LENGTH),
      description: 'Longest note title accepted, in characters.',
      secret: false,
    },
  ],
  permissions: [],

  /** Counts an `entity.created` event once per event id, however often it is delivered. */
  onEvent(event) {
    if (event.eventType !== 'entity.created') return;
    new Transaction()
      .expect(`seen:${event.id}`, undefined)
      .set(`seen:${event.id}`, event.occurredAt)
      .add(ENTITIES_SEEN, 1)
      .commit();
  },

  /** Counts the words of the note's body (`word_count`); a deleted note is left alone. */
  runJob(job) {
    const { note_id: noteId } = job.json();
    storage.updateJson(noteKey(noteId), (note) =>
      note === undefined ? storage.KEEP : { ...note, word_count: wordCount(note.body) },
    );
  },
};
