/**
 * An embedded Temporal dev server (the `temporal` CLI's `server start-dev`) with Deputy's search attributes
 * registered, for the demo and the tests.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DEPUTY_SEARCH_ATTRIBUTES } from '../contract/search-attributes.js';
import { devServerExecutable } from './temporal-cli.js';

/** Options of `startDevServer`. */
export interface DevServerOptions {
  /** SQLite file to persist to; in memory when omitted. */
  dbFilename?: string;
  /** Serve Temporal UI on this port. */
  uiPort?: number;
  /** Port of the frontend; a free one when omitted. */
  port?: number;
  /** Temporal UI's remote codec endpoint (encrypted payloads read decoded in the UI). */
  codecEndpoint?: string;
  /** The server's own log level. @default 'warn' */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Serve the server's Prometheus metrics (its `action` counter among them) on this port. */
  metricsPort?: number;
}

/** A running dev server: its environment (client, connections) and where to look at it. */
export interface DevServer {
  env: TestWorkflowEnvironment;
  address: string;
  uiUrl: string | undefined;
}

/** Starts a dev server with the `temporal` CLI found on this machine. */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: devServerExecutable(),
      searchAttributes: [...DEPUTY_SEARCH_ATTRIBUTES],
      ...(options.dbFilename && { dbFilename: options.dbFilename }),
      ...(options.port && { port: options.port }),
      ...(options.logLevel && { log: { format: 'pretty', level: options.logLevel } }),
      ...(options.uiPort ? { ui: true, uiPort: options.uiPort } : { ui: false }),
      extraArgs: [
        '--dynamic-config-value',
        'frontend.enableUpdateWorkflowExecution=true',
        // Tasks of one fairness key (a tenant, or a tree without one) take turns with the others' within a priority.
        '--dynamic-config-value',
        'matching.enableFairness=true',
        // One partition a queue: priority and fairness order the whole queue, not each of four parts of it.
        '--dynamic-config-value',
        'matching.numTaskqueueReadPartitions=1',
        '--dynamic-config-value',
        'matching.numTaskqueueWritePartitions=1',
        ...(options.codecEndpoint ? ['--ui-codec-endpoint', options.codecEndpoint] : []),
        ...(options.metricsPort ? ['--metrics-port', String(options.metricsPort)] : []),
      ],
    },
  });
  return {
    env,
    address: env.address,
    uiUrl: options.uiPort ? `http://localhost:${options.uiPort}` : undefined,
  };
}
