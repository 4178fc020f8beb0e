/**
 * A `fetch` whose responses end, with an error that says so, once their body passes a size: the SDKs Deputy talks to
 * servers through (the model's, MCP's) read what a server sends before Deputy sees any of it, and a server that sends
 * gigabytes in one answer, or one line that never ends, would otherwise fill the worker's memory.
 */

/**
 * `fetch` with each response body cut off, as an error, past `maxBytes`; `what` names the server in that error, and
 * `onTooBig` hears of it too (an SDK reading a stream in the background may only log what its reader throws).
 */
export function boundedFetch(
  maxBytes: number,
  what: string,
  onTooBig: (err: Error) => void = () => undefined,
  base: typeof fetch = fetch,
): typeof fetch {
  const tooBig = () => {
    const err = new Error(
      `${what} sent more than ${Math.round(maxBytes / 2 ** 20)} MiB in one response; it was abandoned`,
    );
    onTooBig(err);
    return err;
  };
  return async (input, init) => {
    const response = await base(input, init);
    const declared = Number(response.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw tooBig();
    }
    if (!response.body) return response;
    let seen = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > maxBytes) controller.error(tooBig());
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
