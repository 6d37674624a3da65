// The kit inside the component: binds the host wrappers to the real WIT imports of
// `tessera:engine/engine@0.3.0`. Import `exportGuest` from here in the engine's component
// entry only (its `tessera:` imports exist only in the component build; tests use the test
// kit's fakes):
//
//   import { exportGuest } from '@tessera/engine/component';
//   import engine from './engine.js';
//   export const guest = exportGuest(engine);

import * as blobs from 'tessera:engine/blobs@0.3.0';
import * as events from 'tessera:engine/events@0.3.0';
import * as log from 'tessera:engine/log@0.3.0';
import * as mailTransport from 'tessera:engine/mail-transport@0.3.0';
import * as outboundHttp from 'tessera:engine/outbound-http@0.3.0';
import * as realtime from 'tessera:engine/realtime@0.3.0';
import * as scheduler from 'tessera:engine/scheduler@0.3.0';
import * as settings from 'tessera:engine/settings@0.3.0';
import * as storage from 'tessera:engine/storage@0.3.0';
import * as vault from 'tessera:engine/vault@0.3.0';

import { setBackend } from './host.js';

setBackend({ storage, blobs, scheduler, events, realtime, outboundHttp, vault, settings, mailTransport, log });

export { exportGuest } from './guest.js';
