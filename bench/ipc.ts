/** Messages between bench/run.ts and its worker processes (bench/worker-main.ts). */

/** Parent → worker. */
export type ParentMessage =
  { type: 'config'; config: unknown } | { type: 'reset-peak' } | { type: 'peak' } | { type: 'cpu' } | { type: 'stop' };

/** Worker → parent. */
export type WorkerMessage = { type: 'ready' } | { type: 'peak'; rss: number } | { type: 'cpu'; micros: number };
