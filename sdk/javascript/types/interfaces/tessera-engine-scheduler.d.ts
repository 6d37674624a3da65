declare module 'tessera:engine/scheduler@0.3.0' {
  /**
   * Schedules `payload` for `at-unix-ms`, in the call's unit of work (the job exists once
   * the call commits); returns the job id.
   */
  export function schedule(atUnixMs: bigint, payload: Uint8Array): string;
  /**
   * True when the job was still pending. A job this call scheduled is taken out of its
   * unit; a committed one is cancelled at once, and stays cancelled whatever the call does.
   */
  export function cancel(jobId: string): boolean;
}
