/** Messages between bench/run.ts and its worker and replayer processes (bench/worker-main.ts, bench/replayer-main.ts). */

/** Parent → worker or replayer. */
export type ParentMessage =
  | { type: 'config'; config: unknown }
  | { type: 'reset-peak' }
  | { type: 'peak' }
  | { type: 'cpu' }
  | { type: 'stop' }
  | { type: 'replay'; set: ReplaySetName; passes: number };

/** Worker or replayer → parent. */
export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'peak'; rss: number }
  | { type: 'cpu'; micros: number }
  | { type: 'replayed'; ms: number };

/** The histories a replayer holds: a long run's segments, and a delegating tree. */
export type ReplaySetName = 'long' | 'tree';

/** A history a replayer fetches for itself, by its workflow (and run) id. */
export interface HistoryRef {
  workflowId: string;
  runId?: string | undefined;
}
