/**
 * What a worker checks when it starts, and says in one line when it finds something: a model endpoint that is down,
 * refuses the key or is a web page (every run would retry its first call), and children put on the queue root runs
 * are served from. Warnings, never a refusal to start: the endpoint may come up after the worker.
 */
import { endpointOf, networkReason } from '../../activities/model-errors.js';

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/** One line saying what is wrong with the endpoint and what to check, or `null` when it answered as an API does. */
export async function checkModelEndpoint(
  baseURL: string | undefined,
  apiKey: string | undefined,
  timeoutMs = 5000,
): Promise<string | null> {
  const endpoint = endpointOf(baseURL ?? DEFAULT_BASE_URL);
  const url = `${(baseURL ?? DEFAULT_BASE_URL).replace(/\/+$/, '')}/models`;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const reason = networkReason(err);
    const why =
      err instanceof Error && err.name === 'TimeoutError'
        ? `did not answer within ${timeoutMs / 1000} s`
        : `is unreachable${reason ? ` (${reason})` : ''}`;
    return `model endpoint ${endpoint} ${why}: runs retry each model call (by default 10 attempts, backing off, before the run fails: the config's modelRetry); check that it is up and that OPENAI_BASE_URL points at it`;
  }
  await response.body?.cancel();
  const type = response.headers.get('content-type') ?? '';
  if (response.status === 401 || response.status === 403) {
    return `model endpoint ${endpoint} refused the API key (${response.status}): runs will fail at their first model call; check OPENAI_API_KEY`;
  }
  if (/html/i.test(type)) {
    return `model endpoint ${endpoint} answered with a web page (${type}), not an API: check OPENAI_BASE_URL, the API's base URL (often ending in /v1)`;
  }
  if (response.status >= 500) {
    return `model endpoint ${endpoint} answered ${response.status}: runs retry each model call (by default 10 attempts, backing off, before the run fails: the config's modelRetry); check its status`;
  }
  // Some compatible servers serve no list of models (404): that says nothing about their chat completions.
  return null;
}

/**
 * The warnings for a Worker that does not poll the queues of model calls its runs' calls go to (the fleet's, a
 * provider's): those calls wait until some worker does.
 */
export function modelQueueWarnings(
  taskQueue: string,
  queues: readonly { taskQueue: string; field: string }[],
): string[] {
  return queues
    .filter((queue) => queue.taskQueue !== taskQueue)
    .map(
      (queue) =>
        `deputy: warning: runs' model calls go to task queue ${queue.taskQueue} (${queue.field} in the config), which ` +
        `this Worker does not poll; run \`npm run worker\` beside it (it polls that queue and sets its rate), or a Worker ` +
        `on ${queue.taskQueue} with this plugin`,
    );
}

/**
 * The warning for children put on the queue root runs are served from, or `null`: children run at a lower priority
 * than a person's conversation, and a burst of them there takes the slots its turns wait for.
 */
export function sharedQueueWarning(taskQueue: string, childTaskQueue: string): string | null {
  return taskQueue === childTaskQueue
    ? `deputy: warning: children run on ${taskQueue}, the queue root runs and conversations are served from, so a burst ` +
        'of children can hold up interactive turns; give children a queue of their own (DEPUTY_BACKGROUND_TASK_QUEUE, ' +
        "or the plugin's childTaskQueue) and a worker that polls it"
    : null;
}
