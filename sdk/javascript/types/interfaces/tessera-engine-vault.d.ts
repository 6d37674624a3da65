declare module 'tessera:engine/vault@0.3.0' {
  /**
   * Encrypts `plaintext` (authenticated; sealing twice gives different bytes).
   */
  export function seal(plaintext: Uint8Array): Uint8Array;
  /**
   * Decrypts what `seal` returned in the same engine and tenant; `err` when it was altered
   * or sealed elsewhere.
   */
  export function open(sealed: Uint8Array): Uint8Array;
}
