/**
 * R8.1 and R8.2 under a burst, on a real dev server with two workers: the provider is limited to a few requests a
 * second on the fleet's model queue; one tenant starts 40 runs, two others 5 each. The provider never sees more than
 * Temporal's rate lets through, the small tenants' runs take their turns beside the burst instead of behind it, and no
 * run spends past its limits. Temporal holds the rate over time, not within each second: after a quiet second it lets
 * rate + 1 go at once, so the bound is over five seconds and the busiest second is printed beside it. `npm run test:cluster` drives the same
 * scenario on Temporal Server with PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { burstLine, burstProblems, fleetBurst } from '../src/testing/fleet-burst.js';
import { testConfig, useHarness } from './support/harness.js';
import { startFaultWorker, writeConfig } from './faults/support.js';

/** The provider's rate, held by the server for both workers. */
const RATE = 4;
const CONFIG = testConfig({ modelCalls: { taskQueue: `fleet-fair-${randomUUID()}`, requestsPerSecond: RATE } });
const h = useHarness({ config: CONFIG });

describe('R8.1 R8.2 one tenant’s burst against a rate-limited provider', () => {
  it('R8.1 R8.2 two workers, a provider held to 4 requests/s, tenant A starts 40 runs and B and C 5 each: over any five seconds no more requests than Temporal’s rate lets through (20, its burst of 5 after a quiet second, and a second’s 4 a loaded worker can bunch), B and C finish within 2× their time on an idle fleet, no run past its limits', async () => {
    // A second worker, `npm run worker` in a process of its own, on the same queues and config.
    const second = await startFaultWorker(h, writeConfig(CONFIG));
    try {
      // A worker says where its model calls go, and at what rate.
      expect(second.output()).toMatch(
        /^deputy worker: task queues .*, model calls on fleet-fair-\S+, 4 requests\/s on /m,
      );
      const figures = await fleetBurst(h.deputy, h.model, h.id('burst'));
      console.log(`R8.2 ${burstLine(figures)}`);
      expect(burstProblems(figures, RATE), burstLine(figures)).toEqual([]);
      expect(figures.results).toHaveLength(60); // B and C twice, A once
    } finally {
      second.kill('SIGTERM');
      await second.exited;
    }
  }, 240_000);
});
