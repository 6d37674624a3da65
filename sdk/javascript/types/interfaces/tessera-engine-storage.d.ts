declare module 'tessera:engine/storage@0.3.0' {
  export function get(key: string): Uint8Array | undefined;
  /**
   * The values under `keys`, in the order of `keys` (`none` where a key is absent), read
   * in one database round trip and from one snapshot. At most 1000 keys.
   */
  export function getMany(keys: Array<string>): Array<Uint8Array | undefined>;
  export function set(key: string, value: Uint8Array): void;
  /**
   * True when the key existed.
   */
  export { _delete as delete };
  function _delete(key: string): boolean;
  /**
   * Entries whose key starts with `prefix`, in key order (descending when `reverse`),
   * strictly after (before, when `reverse`) `after` when given, at most `limit`.
   * Bounded by the host: at most a page (setting `storage.scan-page`,
   * `TESSERA_ENGINE_SCAN_PAGE`, default 1000) whatever `limit` asks, and all the scans of one
   * call (a request, a job, an event, a lifecycle call) return at most a budget of entries
   * together (setting `storage.scan-budget`, `TESSERA_ENGINE_SCAN_BUDGET`, default 10000): a
   * scan is cut at what the budget has left, and one made with nothing left is `err` starting
   * `scan budget exhausted`. Fewer entries than min(`limit`, page, budget left) means the
   * prefix has no more; otherwise continue with `after` = the last key, in this call within
   * its budget, or in the next (a cursor).
   */
  export function scan(prefix: string, after: string | undefined, limit: number, reverse: boolean): Array<[string, Uint8Array]>;
  /**
   * Removes every entry whose key starts with `prefix`; returns how many the call's view
   * held.
   */
  export function deletePrefix(prefix: string): bigint;
  /**
   * Replaces the value under `key` only when it is currently `expected` (`none`: the key is
   * absent) in the call's view; `value` `none` deletes the key. True when it did (committed
   * at once, with everything the call wrote before: a synchronisation point, see above),
   * false (and nothing changed) when the current value differs. Calls of one engine run
   * concurrently (requests, jobs, events), so read-modify-write updates that must not be
   * lost (state machines, claims of a name) loop on this or on `transact`.
   */
  export function compareAndSwap(key: string, expected: Uint8Array | undefined, value: Uint8Array | undefined): boolean;
  /**
   * Writes `sets`, removes `deletes` (after the sets) and schedules `jobs`
   * (`(at-unix-ms, payload)`, as `scheduler.schedule` does), in the call's unit of work.
   * Returns the job ids in order.
   */
  export function writeBatch(sets: Array<[string, Uint8Array]>, deletes: Array<string>, jobs: Array<[bigint, Uint8Array]>): Array<string>;
  /**
   * Commits `transaction` at once, with everything the call wrote before it (a
   * synchronisation point, see above), when every `expect` holds: the sets, then the
   * deletes, then the adds: `some(job ids)`; `none` (nothing written, no job scheduled) when
   * a key held another value. The limits of `write-batch` apply to all its entries together.
   * For state that several calls change at once: read, decide, and `transact` expecting what
   * was read; on `none`, read again. Counters kept with `add` beside such state (a folder's
   * size) stay exact because the state change and its count commit together or not at all.
   */
  export function transact(transaction: Transaction): Array<string> | undefined;
  /**
   * What `transact` commits: `write-batch`'s sets, deletes and jobs, on conditions, with
   * counters.
   */
  export interface Transaction {
    /**
     * Keys that must hold exactly these values (`none`: absent) in the call's view for
     * anything to be written, checked again under the database's row locks at commit.
     */
    expect: Array<[string, Uint8Array | undefined]>,
    sets: Array<[string, Uint8Array]>,
    deletes: Array<string>,
    /**
     * Counters: adds each amount to the signed 64-bit integer stored under its key as
     * decimal text (a JSON number; absent counts as 0), without reading it first, so
     * concurrent adds never conflict. A key may not also be set or deleted by the same
     * transaction; a value that is not such an integer, or an overflow, fails it.
     */
    add: Array<[string, bigint]>,
    jobs: Array<[bigint, Uint8Array]>,
  }
}
