/**
 * How often a worker sends an activity's heartbeats to the server. Each heartbeat that reaches the server is a
 * write there and a billed action on Temporal Cloud, and a streaming model call reports progress several times a
 * second: the SDK keeps the newest details and sends them at most this often. It also bounds how late a cancellation
 * reaches a running call (it comes back in a heartbeat's reply) and how stale the live output a watcher reads is.
 */
export const HEARTBEAT_THROTTLE = '4 seconds';
