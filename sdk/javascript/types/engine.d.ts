/// <reference path="./interfaces/tessera-engine-blobs.d.ts" />
/// <reference path="./interfaces/tessera-engine-events.d.ts" />
/// <reference path="./interfaces/tessera-engine-guest.d.ts" />
/// <reference path="./interfaces/tessera-engine-log.d.ts" />
/// <reference path="./interfaces/tessera-engine-mail-transport.d.ts" />
/// <reference path="./interfaces/tessera-engine-outbound-http.d.ts" />
/// <reference path="./interfaces/tessera-engine-realtime.d.ts" />
/// <reference path="./interfaces/tessera-engine-scheduler.d.ts" />
/// <reference path="./interfaces/tessera-engine-settings.d.ts" />
/// <reference path="./interfaces/tessera-engine-storage.d.ts" />
/// <reference path="./interfaces/tessera-engine-types.d.ts" />
/// <reference path="./interfaces/tessera-engine-vault.d.ts" />
declare module 'tessera:engine/engine@0.3.0' {
  export type * as TesseraEngineBlobs030 from 'tessera:engine/blobs@0.3.0'; // import tessera:engine/blobs@0.3.0
  export type * as TesseraEngineEvents030 from 'tessera:engine/events@0.3.0'; // import tessera:engine/events@0.3.0
  export type * as TesseraEngineLog030 from 'tessera:engine/log@0.3.0'; // import tessera:engine/log@0.3.0
  export type * as TesseraEngineMailTransport030 from 'tessera:engine/mail-transport@0.3.0'; // import tessera:engine/mail-transport@0.3.0
  export type * as TesseraEngineOutboundHttp030 from 'tessera:engine/outbound-http@0.3.0'; // import tessera:engine/outbound-http@0.3.0
  export type * as TesseraEngineRealtime030 from 'tessera:engine/realtime@0.3.0'; // import tessera:engine/realtime@0.3.0
  export type * as TesseraEngineScheduler030 from 'tessera:engine/scheduler@0.3.0'; // import tessera:engine/scheduler@0.3.0
  export type * as TesseraEngineSettings030 from 'tessera:engine/settings@0.3.0'; // import tessera:engine/settings@0.3.0
  export type * as TesseraEngineStorage030 from 'tessera:engine/storage@0.3.0'; // import tessera:engine/storage@0.3.0
  export type * as TesseraEngineTypes030 from 'tessera:engine/types@0.3.0'; // import tessera:engine/types@0.3.0
  export type * as TesseraEngineVault030 from 'tessera:engine/vault@0.3.0'; // import tessera:engine/vault@0.3.0
  export * as guest from 'tessera:engine/guest@0.3.0'; // export tessera:engine/guest@0.3.0
}
