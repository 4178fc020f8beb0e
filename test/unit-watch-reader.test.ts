/**
 * A run's history read as watch events without a server: the committed replay fixtures (histories exported by
 * Temporal's CLI) go through the same reader a live watch uses.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { arrayFromPayloads, defaultPayloadConverter } from '@temporalio/common';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { RunReader, type ReaderHooks } from '../src/client/watch-reader.js';
import type { HistoryEvent, WatchBody } from '../src/client/watch-events.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';

/**
 * The protobuf objects of a fixture: Temporal's JSON export writes timestamps and durations as strings, which
 * protobuf's plain-object form takes as `{ seconds, nanos }`.
 */
function history(name: string): HistoryEvent[] {
  const text = readFileSync(join(PROJECT_ROOT, 'test/fixtures/histories', `${name}.json`), 'utf8');
  const json = JSON.parse(text, (_key, value: unknown) => {
    if (typeof value !== 'string') return value;
    const duration = /^(\d+)(?:\.(\d{1,9}))?s$/.exec(value);
    if (duration) return { seconds: duration[1], nanos: Number((duration[2] ?? '').padEnd(9, '0')) };
    if (/^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(value)) {
      const fraction = /\.(\d+)Z$/.exec(value)?.[1] ?? '';
      return {
        seconds: String(Math.floor(Date.parse(value) / 1000)),
        nanos: Number(fraction.padEnd(9, '0').slice(0, 9)),
      };
    }
    return value;
  }) as object;
  return proto.temporal.api.history.v1.History.fromObject(json).events;
}

/** Reads every event of a fixture; `behind` events count as behind a cursor. */
async function readAll(name: string, behind = 0) {
  const known = new Set<string>();
  const started: string[] = [];
  const awaited: string[] = [];
  const hooks: ReaderHooks = {
    decodeAll: async (payloads) => arrayFromPayloads(defaultPayloadConverter, payloads?.payloads ?? []),
    knows: (child) => known.has(child),
    initiated: (child) => void known.add(child),
    started: (child) => void started.push(child),
    ended: (child) => {
      awaited.push(child);
      return undefined;
    },
    modelScheduled: () => undefined,
  };
  const reader = new RunReader(hooks);
  const said: WatchBody[] = [];
  for (const event of history(name)) said.push(...(await reader.read(event, Number(event.eventId) <= behind)));
  return { said, started, awaited, reader };
}

describe('R6.5 a run history read as watch events, without a server', () => {
  it('R6.5 a delegating parent: its start, its model calls with cost, both children started and joined, its end', async () => {
    const { said, started, awaited, reader } = await readAll('fixture-delegating-parent');
    const types = said.map((e) => e.type);
    expect(types[0]).toBe('run/started');
    expect(types.at(-1)).toBe('run/ended');
    expect(said.at(-1)).toMatchObject({ type: 'run/ended', status: 'completed' });
    const delegations = said.filter((e) => e.type === 'delegation/started').map((e) => e.child);
    // The two children start at once: the server records their starts in whichever order they came.
    expect([...delegations].sort()).toEqual(['fixture-delegating-parent/sum-1', 'fixture-delegating-parent/tax-1']);
    expect(
      said
        .filter((e) => e.type === 'delegation/joined')
        .map((e) => e.child)
        .sort(),
    ).toEqual([...delegations].sort());
    // A child's join waits for the child's own end first, and the watch follows each child it knew of.
    expect(awaited.sort()).toEqual([...delegations].sort());
    expect(started.sort()).toEqual([...delegations].sort());
    const finished = said.filter((e) => e.type === 'model/finished');
    expect(finished.length).toBeGreaterThanOrEqual(2);
    for (const call of finished) expect(call.costUsd).toBeGreaterThan(0);
    expect(reader.price).toEqual({ inputMicroUsdPerMTok: 1_000_000, outputMicroUsdPerMTok: 2_000_000 });
  });

  it('R6.5 events behind the cursor are not said again, but still teach the reader the price', async () => {
    const all = (await readAll('fixture-two-tool-calls')).said;
    const events = history('fixture-two-tool-calls');
    const behind = Number(events[Math.floor(events.length / 2)]!.eventId);
    const { said, reader } = await readAll('fixture-two-tool-calls', behind);
    expect(said.length).toBeLessThan(all.length);
    expect(all.slice(all.length - said.length)).toEqual(said);
    expect(reader.price).toBeDefined();
    expect(said.filter((e) => e.type === 'model/finished').every((e) => (e.costUsd as number) > 0)).toBe(true);
  });

  it('R6.5 a cancelled run ends cancelled', async () => {
    const { said } = await readAll('fixture-cancelled');
    expect(said.at(-1)).toMatchObject({ type: 'run/ended', status: 'cancelled' });
  });
});
