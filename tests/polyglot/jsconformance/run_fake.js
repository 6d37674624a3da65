// Runs a scenario of the jsconformance engine through the JavaScript kit's test kit, as
// `tests/components/conformance/src/fake_runner.rs` does for the Rust engine and
// `tests/polyglot/pyconformance/run_fake.py` for the Python one: the operator's settings and the
// steps (`{"settings": {name: value}, "steps": [{"tenant_id", "user_id", "role", "script"}]}`)
// read from the file `TESSERA_CONFORMANCE_SCENARIO`, the transcript (one `{"status", "body"}`
// per step, then `{"published": [n, …]}`: the `n` of each event the engine published and
// committed, in order) written to `TESSERA_CONFORMANCE_TRANSCRIPT`. `node run_fake.js`, from
// any directory.

import { readFileSync, writeFileSync } from 'node:fs';
import process from 'node:process';

import { Context, TestHost } from '../../../sdk/javascript/src/testkit/index.js';
import engine from './src/engine.js';

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} names the ${name.endsWith('SCENARIO') ? 'scenario' : 'transcript'} file`);
    process.exit(2);
  }
  return value;
}

function main() {
  const scenario = JSON.parse(readFileSync(required('TESSERA_CONFORMANCE_SCENARIO'), 'utf8'));
  const transcriptPath = required('TESSERA_CONFORMANCE_TRANSCRIPT');
  const host = new TestHost(engine);
  for (const [name, value] of Object.entries(scenario.settings ?? {})) host.setSetting(name, value);
  const transcript = [];
  for (const step of scenario.steps ?? []) {
    const ctx = Context.forTests(step.tenant_id, step.user_id, step.role ?? 'editor');
    const answer = host.post(ctx, '/api/v1/script', step.script);
    transcript.push({ status: answer.status, body: answer.json() });
  }
  transcript.push({ published: host.published().map((event) => event.payload.n ?? null) });
  writeFileSync(transcriptPath, JSON.stringify(transcript));
}

main();
