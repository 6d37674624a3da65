// Realtime on the test kit: what an engine publishes is captured per call and kept only when the
// call commits, the fakes check it as the host does, and `authorizeSubscription` asks the engine
// as the host would (unknown topics refused without asking, read-only, throwing denies).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { HostError, Response, Router, ValidationErrors, realtime, storage } from '../src/index.js';
import { Context, Subscription, TestHost } from '../src/testkit/index.js';

const TENANT = 'tenant-1';
const editor = (userId) => Context.forTests(TENANT, userId, 'editor');

const routes = new Router()
  .post('/api/v1/rooms/{id}/join', (ctx, request, params) => {
    storage.set(`rooms/${params.id}/${ctx.userId}`, '1');
    return Response.noContent();
  })
  .post('/api/v1/rooms/{id}/say', (ctx, request, params) => {
    realtime.publish(`room.${params.id}`, 'said', { room_id: params.id, by: ctx.userId });
    realtime.publishToUser('bob', 'lobby', 'nudged', { by: ctx.userId });
    if (request.queryUnchecked().get('fail') !== undefined) throw ValidationErrors.single('body', 'required');
    return Response.noContent();
  })
  .post('/api/v1/rooms/{id}/kick/{user}', (ctx, request, params) => {
    realtime.endSubscriptions(`room.${params.id}`, params.user);
    return Response.noContent();
  })
  .post('/api/v1/wrong', (ctx, request) => {
    const attempts = {
      topic: () => realtime.publish('elsewhere', 'said', {}),
      type: () => realtime.publish('lobby', 'Said!', {}),
      data: () => realtime.publish('lobby', 'said', [1, 2]),
      large: () => realtime.publish('lobby', 'said', { x: 'y'.repeat(70000) }),
      user: () => realtime.publishToUser('', 'lobby', 'said', {}),
    };
    try {
      attempts[request.queryUnchecked().get('case')]();
    } catch (error) {
      assert.ok(error instanceof HostError);
      return Response.ok({ error: error.reason });
    }
    return Response.ok({ error: null });
  });

const rooms = {
  descriptor: { code: 'rooms', name: 'Rooms', version: '0.1.0' },
  router: routes,
  topics: ['room.*', 'lobby'],
  authorizeSubscription(ctx, topic) {
    storage.set('asked', ctx.userId); // not kept: the call is read-only
    if (ctx.userId === 'thrower') throw new Error('no answer');
    if (ctx.userId === 'vague') return 'yes'; // anything but true refuses
    if (topic.startsWith('room.')) return storage.get(`rooms/${topic.slice(5)}/${ctx.userId}`) !== undefined;
    return topic === 'lobby' && !ctx.isGuest();
  },
  provisionTenant() {
    realtime.publish('lobby', 'opened', {});
  },
};

test('what a call publishes is kept when it commits, in order', () => {
  const host = new TestHost(rooms);
  const ada = editor('ada');
  assert.deepEqual(host.topics(), ['room.*', 'lobby']);
  assert.equal(host.post(ada, '/api/v1/rooms/r1/say', {}).status, 204);
  assert.deepEqual(host.realtimeEvents(), [
    { tenantId: TENANT, topic: 'room.r1', userId: undefined, eventType: 'said', data: { room_id: 'r1', by: 'ada' } },
    { tenantId: TENANT, topic: 'lobby', userId: 'bob', eventType: 'nudged', data: { by: 'ada' } },
  ]);
  // A failed answer discards what the call published.
  assert.equal(host.post(ada, '/api/v1/rooms/r1/say?fail', {}).status, 422);
  assert.equal(host.realtimeEvents().length, 2);

  host.clearRealtime();
  assert.deepEqual(host.realtimeEvents(), []);
  assert.equal(host.post(ada, '/api/v1/rooms/r1/kick/bob', {}).status, 204);
  assert.deepEqual(host.endedSubscriptions(), [{ tenantId: TENANT, topic: 'room.r1', userId: 'bob' }]);
  assert.deepEqual(host.realtimeEvents(), []);

  // Lifecycle calls publish in the tenant they serve.
  host.provisionTenant({ tenantId: 'tenant-2' });
  assert.equal(host.realtimeEvents()[0].tenantId, 'tenant-2');
});

test('publications are checked as the host checks them', () => {
  const host = new TestHost(rooms);
  for (const [kase, expected] of [
    ['topic', "matches none of the engine's topic patterns"],
    ['type', 'is not an event type'],
    ['data', 'a JSON object'],
    ['large', 'at most 65536 bytes'],
    ['user', 'a user id is 1 to 200 bytes'],
  ]) {
    const answer = host.post(editor('ada'), `/api/v1/wrong?case=${kase}`, {});
    assert.equal(answer.status, 200, kase);
    assert.match(answer.json().data.error, new RegExp(expected), kase);
  }
  assert.deepEqual(host.realtimeEvents(), []);
});

test('a subscription asks the engine, read-only', () => {
  const host = new TestHost(rooms);
  const [ada, bob] = [editor('ada'), editor('bob')];
  assert.equal(host.post(ada, '/api/v1/rooms/r1/join', {}).status, 204);
  assert.equal(host.authorizeSubscription(ada, 'room.r1'), Subscription.ALLOWED);
  assert.equal(host.authorizeSubscription(bob, 'room.r1'), Subscription.FORBIDDEN);
  assert.equal(host.authorizeSubscription(bob, 'lobby'), Subscription.ALLOWED);
  const guest = new Context({ tenantId: TENANT, userId: 'gus', role: 'viewer', tokenType: 'guest' });
  assert.equal(host.authorizeSubscription(guest, 'lobby'), Subscription.FORBIDDEN);
  for (const topic of ['room', 'room.r1.x', 'hall', 'room.r 1', '']) {
    assert.equal(host.authorizeSubscription(ada, topic), Subscription.UNKNOWN_TOPIC, topic);
  }
  // Throwing or answering anything but true refuses; what the engine wrote is not kept.
  assert.equal(host.authorizeSubscription(editor('thrower'), 'lobby'), Subscription.FORBIDDEN);
  assert.equal(host.authorizeSubscription(editor('vague'), 'lobby'), Subscription.FORBIDDEN);
  assert.equal(host.stored(TENANT, 'asked'), undefined);
  assert.ok(host.logs().some(({ level, message }) => level === 'error' && message.includes('no answer')));
});

test('by default an engine has no topics and denies', () => {
  const host = new TestHost({ descriptor: { code: 'silent', name: 'Silent', version: '0.1.0' } });
  assert.deepEqual(host.topics(), []);
  assert.equal(host.authorizeSubscription(editor('ada'), 'anything'), Subscription.UNKNOWN_TOPIC);
  assert.equal(host.guest.authorizeSubscription({ tenantId: TENANT, userId: 'ada', role: 'owner' }, 'anything'), false);
});

test('a malformed topic pattern is refused as the host refuses it', () => {
  assert.throws(
    () => new TestHost({ descriptor: { code: 'bad', name: 'Bad', version: '0.1.0' }, topics: ['room.**'] }),
    /the topic pattern "room\.\*\*" is malformed/,
  );
});
