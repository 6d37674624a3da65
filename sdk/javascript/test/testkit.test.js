// The typed host imports, the guest glue and the test kit's fakes together, against the host's
// semantics (`wit/engine.wit`), as the Rust SDK's `testkit` tests: one call, one unit of work;
// synchronisation points; scan pages and budgets; jobs, events, settings, outbound HTTP, vault,
// mail and blobs; the default lifecycle hooks; exceptions as 500s and `err`s.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  HostError,
  Operation,
  Response,
  Router,
  Transaction,
  ValidationErrors,
  blobs,
  events,
  log,
  mailTransport,
  outboundHttp,
  scheduler,
  settings,
  storage,
  utf8Decode,
  vault,
} from '../src/index.js';
import { CallFailed, Context, TestHost } from '../src/testkit/index.js';

const ada = Context.forTests('tenant-1', 'ada', 'editor');
const text = (bytes) => (bytes === undefined ? undefined : utf8Decode(bytes));

function engine(router, extra = {}) {
  return {
    descriptor: { code: 'kit', name: 'Kit', version: '0.1.0', outboundHosts: ['https://api.example.com'] },
    router,
    settings: [{ name: 'greeting', kind: 'text', defaultValue: 'hello', description: 'A greeting.' }],
    ...extra,
  };
}

test('a request commits when it answers 2xx or 3xx, and nothing otherwise', () => {
  const routes = new Router()
    .post('/api/v1/ok', () => {
      storage.set('a', 'kept');
      events.publish('kit.done', { ok: true });
      scheduler.scheduleJson(1000, { n: 1 });
      return Response.created({});
    })
    .post('/api/v1/refused', () => {
      storage.set('b', 'dropped');
      events.publish('kit.refused', {});
      scheduler.schedule(1000, 'x');
      throw ValidationErrors.single('title', 'required');
    })
    .post('/api/v1/crash', () => {
      storage.set('c', 'dropped');
      return null.oops;
    });
  const host = new TestHost(engine(routes));
  assert.equal(host.post(ada, '/api/v1/ok', {}).status, 201);
  assert.equal(host.post(ada, '/api/v1/refused', {}).status, 422);
  const crashed = host.post(ada, '/api/v1/crash', {});
  assert.deepEqual([crashed.status, crashed.json()], [500, { message: 'Server Error.' }]);
  assert.deepEqual(host.storedKeys('tenant-1'), ['a']);
  assert.equal(text(host.stored('tenant-1', 'a')), 'kept');
  assert.deepEqual(host.published(), [{ tenantId: 'tenant-1', eventType: 'kit.done', payload: { ok: true }, actorId: 'ada' }]);
  assert.equal(host.jobs().length, 1);
  // The crash was logged with its stack, through the log import.
  const logged = host.logs().find((entry) => entry.level === 'error');
  assert.match(logged.message, /^request failed: TypeError/);
  assert.match(logged.message, /testkit\.test\.js/);
});

test('reads see the call’s own writes; other tenants see nothing', () => {
  const routes = new Router().post('/api/v1/write', () => {
    storage.putJson('k', { n: 1 });
    const seen = storage.getJson('k');
    storage.delete('missing');
    return Response.ok({ seen, many: storage.getManyJson(['k', 'missing']), exists: storage.exists('k') });
  });
  const host = new TestHost(engine(routes));
  assert.deepEqual(host.post(ada, '/api/v1/write', {}).json().data, { seen: { n: 1 }, many: [{ n: 1 }, null], exists: true });
  assert.deepEqual(host.storedKeys('tenant-2'), []);
});

test('compare-and-swap and transact are synchronisation points', () => {
  const routes = new Router()
    .post('/api/v1/claim', () => {
      storage.set('before', '1');
      assert.equal(storage.compareAndSwap('claim', undefined, 'mine'), true);
      assert.equal(storage.compareAndSwap('claim', undefined, 'again'), false);
      storage.set('after', '1');
      throw ValidationErrors.single('x', 'invalid');
    })
    .post('/api/v1/count', () => {
      const ids = new Transaction().expect('claim', 'mine').add('count', 2).jobJson(5, { n: 1 }).commit();
      assert.equal(ids.length, 1);
      assert.equal(new Transaction().expect('claim', 'theirs').set('x', '1').commit(), null);
      assert.throws(() => new Transaction().set('count', '1').add('count', 1).commit(), (error) => {
        assert.ok(error instanceof HostError);
        assert.equal(error.operation, 'storage.transact');
        assert.match(error.message, /both counted and set/);
        return true;
      });
      return Response.ok(storage.counter('count'));
    })
    .post('/api/v1/fail-after-commit-now', () => {
      storage.set('attempts', '1');
      storage.commitNow();
      storage.set('lost', '1');
      return Response.error(500, 'no');
    });
  const host = new TestHost(engine(routes));
  assert.equal(host.post(ada, '/api/v1/claim', {}).status, 422);
  // What the call wrote up to the compare-and-swap committed with it; what followed did not.
  assert.deepEqual(host.storedKeys('tenant-1'), ['before', 'claim']);
  assert.deepEqual(host.post(ada, '/api/v1/count', {}).json(), { data: 2 });
  assert.equal(text(host.stored('tenant-1', 'count')), '2');
  assert.equal(host.post(ada, '/api/v1/fail-after-commit-now', {}).status, 500);
  assert.ok(host.stored('tenant-1', 'attempts'));
  assert.equal(host.stored('tenant-1', 'lost'), undefined);
});

test('updateJson loops on compare-and-swap', () => {
  const host = new TestHost(engine(new Router()));
  host.inCall('tenant-1', () => {
    assert.equal(storage.updateJson('n', (current) => (current ?? 0) + 1), 1);
    assert.equal(storage.updateJson('n', (current) => current + 1), 2);
    assert.equal(storage.updateJson('n', () => storage.KEEP), storage.KEEP);
  });
  assert.equal(host.storedJson('tenant-1', 'n'), 2);
  host.inCall('tenant-1', () => storage.updateJson('n', () => storage.DELETE));
  assert.equal(host.stored('tenant-1', 'n'), undefined);
});

test('scans are cut at a page and at the call’s budget', () => {
  const host = new TestHost(engine(new Router()));
  host.inCall('tenant-1', () => {
    storage.writeBatch(
      Array.from({ length: 7 }, (_, index) => [`k/${index}`, String(index)]),
      ['k/6'],
      [],
    );
  });
  assert.deepEqual(host.storedKeys('tenant-1'), ['k/0', 'k/1', 'k/2', 'k/3', 'k/4', 'k/5']);
  host.setSetting('storage.scan-page', '2');
  host.setSetting('storage.scan-budget', '5');
  host.inCall('tenant-1', () => {
    let scan = storage.scan('k/', { limit: 10 });
    assert.deepEqual(scan.entries.map(([key]) => key), ['k/0', 'k/1']);
    assert.equal(scan.exhausted, false);
    scan = storage.scan('k/', { after: 'k/1', limit: 10 });
    assert.deepEqual(scan.entries.map(([key]) => key), ['k/2', 'k/3']);
    scan = storage.scan('k/', { after: 'k/3', limit: 10, reverse: true });
    assert.deepEqual(scan.entries.map(([key]) => key), ['k/2']);
    assert.equal(storage.scanBudgetLeft(), 0);
    assert.throws(() => storage.scan('k/'), /scan budget exhausted/);
  });
  // The next call has its whole budget again.
  host.inCall('tenant-1', () => assert.equal(storage.scan('k/', { limit: 1 }).entries.length, 1));
});

test('keys sort byte-wise, as UTF-8', () => {
  const host = new TestHost(engine(new Router()));
  host.inCall('tenant-1', () => {
    for (const key of ['p/\u{10000}', 'p/\uffff', 'p/a']) storage.set(key, '1');
    assert.deepEqual(storage.list('p/').map(([key]) => key), ['p/a', 'p/\uffff', 'p/\u{10000}']);
  });
});

test('jobs run when due; a failing one stays with its attempt counted', () => {
  let runs = 0;
  const host = new TestHost(
    engine(new Router(), {
      runJob(job) {
        runs += 1;
        storage.set(`ran/${job.json().n}`, String(job.attempt));
        if (job.json().n === 2) throw new Error('not yet');
      },
    }),
  );
  host.inCall('tenant-1', () => {
    scheduler.scheduleJson(10, { n: 1 });
    scheduler.scheduleJson(20, { n: 2 });
    const cancelled = scheduler.scheduleJson(30, { n: 3 });
    assert.equal(scheduler.cancel(cancelled), true);
  });
  assert.equal(host.runDueJobs(5).length, 0);
  const ran = host.runDueJobs(100);
  assert.deepEqual(ran.map((outcome) => outcome.ok), [true, false]);
  assert.equal(ran[1].error, 'not yet');
  assert.equal(runs, 2);
  assert.deepEqual(host.jobs().map((job) => job.attempt), [1]);
  assert.equal(text(host.stored('tenant-1', 'ran/1')), '1');
  // The failed run's writes were not kept.
  assert.equal(host.stored('tenant-1', 'ran/2'), undefined);
  assert.match(host.logs().at(-1).message, /^runJob failed: Error: not yet/);
});

test('settings: declared defaults, the operator’s values, the host’s own', () => {
  const host = new TestHost(engine(new Router()));
  host.inCall('tenant-1', () => {
    assert.equal(settings.get('greeting'), 'hello');
    assert.equal(settings.get('storage.scan-page'), '1000');
    assert.equal(settings.integer('engine.max-body-bytes'), 8388608);
    assert.equal(settings.boolean('mail-transport.available'), false);
    assert.equal(settings.get('nothing'), undefined);
  });
  host.setSetting('greeting', 'hi');
  host.inCall('tenant-1', () => assert.equal(settings.get('greeting'), 'hi'));
});

test('outbound HTTP answers what the test gives, within the outbound hosts', () => {
  const host = new TestHost(engine(new Router()));
  host.respond('GET', 'https://api.example.com/x', 200, '{"a":1}');
  host.respond('POST', 'https://api.example.com/x', 204);
  host.failOutbound('GET', 'https://api.example.com/down', 'connection refused');
  host.inCall('tenant-1', () => {
    const answer = outboundHttp.fetch({ url: 'https://api.example.com/x' });
    assert.deepEqual([answer.status, answer.ok, answer.json()], [200, true, { a: 1 }]);
    assert.throws(() => outboundHttp.fetch({ url: 'https://api.example.com/down' }), /http.fetch failed: connection refused/);
    assert.throws(() => outboundHttp.checkTarget('https://evil.example.org/'), HostError);
    assert.equal(outboundHttp.fetch({ method: 'post', url: 'https://api.example.com/x', json: { b: 2 } }).status, 204);
  });
  const [, , sent] = host.outboundRequests();
  assert.equal(sent.method, 'POST');
  assert.deepEqual(sent.headers, [['content-type', 'application/json']]);
  assert.equal(text(sent.body), '{"b":2}');
});

test('vault, mail and blobs', () => {
  const host = new TestHost(engine(new Router()));
  host.inCall('tenant-1', () => {
    assert.equal(vault.openText(vault.seal('secret')), 'secret');
    assert.throws(() => vault.open('plain'), /vault.open failed/);
    const mail = { sender: 'a@example.com', recipients: ['b@example.com'], subject: 's', text: 't', messageId: '<1@x>' };
    assert.throws(() => mailTransport.send(mail), /mail-transport.send failed: mail transport unavailable/);
    host.allowMail();
    mailTransport.send(mail);
    assert.equal(blobs.put('f', 'abcd', { quotaBytes: 6, sets: [['meta/f', '4']] }), true);
    assert.equal(blobs.put('g', 'abcd', { quotaBytes: 6 }), false);
    assert.equal(blobs.usage(), 4);
    assert.equal(text(blobs.get('f')), 'abcd');
  });
  assert.equal(host.mails().length, 1);
  assert.equal(text(host.blob('tenant-1', 'f')), 'abcd');
  assert.equal(text(host.stored('tenant-1', 'meta/f')), '4');
  host.inCall('tenant-1', () => assert.equal(blobs.delete(['f', 'nope'], ['meta/f']), 1));
  assert.equal(host.blob('tenant-1', 'f'), undefined);
});

test('the default lifecycle hooks record and forget the tenant and its users', () => {
  const host = new TestHost(engine(new Router()));
  host.provisionTenant({ tenantId: 'tenant-1', tenantShortId: 'acme', name: 'Acme' });
  const record = host.storedJson('tenant-1', 'tenant');
  assert.deepEqual([record.tenant_id, record.tenant_short_id, record.name], ['tenant-1', 'acme', 'Acme']);
  host.provisionTenant({ tenantId: 'tenant-1', tenantShortId: 'acme2', name: 'Acme' });
  assert.equal(host.storedJson('tenant-1', 'tenant').provisioned_at, record.provisioned_at);
  host.provisionUser({ tenantId: 'tenant-1', userId: 'ada', email: 'ada@example.com' });
  assert.equal(host.storedJson('tenant-1', 'users/ada').email, 'ada@example.com');
  host.inCall('tenant-1', () => storage.set('users/ada/x', '1'));
  host.deprovisionUser('tenant-1', 'ada');
  assert.deepEqual(host.storedKeys('tenant-1'), ['tenant']);
  host.deprovisionTenant('tenant-1');
  assert.deepEqual(host.storedKeys('tenant-1'), []);
});

test('a hook that throws fails its call with err, committing nothing', () => {
  const host = new TestHost(
    engine(new Router(), {
      descriptor: { code: 'kit', name: 'Kit', version: '0.1.0', subscriptions: ['entity.created'] },
      onEvent(event) {
        storage.set(`seen/${event.id}`, JSON.stringify(event.payload));
        if (event.payload.fail) throw new Error('refused');
        log.info(`saw ${event.eventType}`);
      },
      provisionTenant() {
        storage.set('half', '1');
        storage.get(undefined.key);
      },
    }),
  );
  host.deliver({ id: 'e1', eventType: 'entity.created', tenantId: 'tenant-1', payload: { a: 1 } });
  assert.throws(
    () => host.deliver({ id: 'e2', eventType: 'entity.created', tenantId: 'tenant-1', payload: { fail: true } }),
    (error) => error instanceof CallFailed && error.reason === 'refused',
  );
  assert.deepEqual(host.storedKeys('tenant-1'), ['seen/e1']);
  assert.throws(() => host.provisionTenant({ tenantId: 'tenant-1' }), CallFailed);
  assert.equal(host.stored('tenant-1', 'half'), undefined);
  assert.ok(host.logs().some((entry) => entry.level === 'info' && entry.message === 'saw entity.created'));
});

test('a handler returning a Promise or no Response is a logged 500', () => {
  const routes = new Router()
    .get('/api/v1/async', async () => Response.ok(1))
    .get('/api/v1/nothing', () => undefined);
  const host = new TestHost(engine(routes));
  assert.equal(host.get(ada, '/api/v1/async').status, 500);
  assert.equal(host.get(ada, '/api/v1/nothing').status, 500);
  assert.equal(host.logs().length, 2);
});

test('the guest describes the engine in the WIT shapes', () => {
  const routes = new Router().get('/api/v1/x', () => Response.ok(1)).doc(new Operation('X').ok({ type: 'integer' }));
  const host = new TestHost(engine(routes, { permissions: ['send-mail'] }));
  assert.deepEqual(host.describe(), {
    code: 'kit',
    name: 'Kit',
    version: '0.1.0',
    requiresTenantProvision: false,
    requiresUserProvision: false,
    subscriptions: [],
    outboundHosts: ['https://api.example.com'],
  });
  assert.deepEqual(host.guest.describeSettings(), [
    { name: 'greeting', kind: 'text', defaultValue: 'hello', description: 'A greeting.', secret: false },
  ]);
  assert.deepEqual(host.guest.describePermissions(), ['send-mail']);
  assert.ok(host.api().paths['/api/v1/x'].get);
  // A path not routed, and a method not routed.
  assert.equal(host.get(ada, '/api/v1/y').status, 404);
  assert.equal(host.request(ada, 'DELETE', '/api/v1/x').header('allow'), 'GET');
});
