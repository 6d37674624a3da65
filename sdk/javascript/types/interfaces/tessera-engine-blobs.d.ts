declare module 'tessera:engine/blobs@0.3.0' {
  /**
   * Stores `content` under `key` (replacing the blob there) and writes `sets` to `storage`,
   * in the call's unit of work, when this engine's blobs of the tenant in the call's view,
   * counting `content` instead of the blob it replaces, stay within `quota-bytes` in total
   * (`none`: no quota). `false`, and nothing added, when they would not. The quota is
   * checked again against the committed total when the unit commits.
   */
  export function put(key: string, content: Uint8Array, quotaBytes: bigint | undefined, sets: Array<[string, Uint8Array]>): boolean;
  export function get(key: string): Uint8Array | undefined;
  /**
   * Removes the blobs `keys` and the `storage` entries `deletes`, in the call's unit of work;
   * returns how many of the blobs existed in the call's view.
   */
  export { _delete as delete };
  function _delete(keys: Array<string>, deletes: Array<string>): bigint;
  /**
   * Removes every blob whose key starts with `prefix`; returns how many.
   */
  export function deletePrefix(prefix: string): bigint;
  /**
   * The bytes this engine's blobs take in the tenant.
   */
  export function usage(): bigint;
}
