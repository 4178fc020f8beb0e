/**
 * Temporal Server on PostgreSQL, as a cluster runs it, on this machine. The server and its SQL
 * tool are built once from the Go module proxy and cached under `.deputy/cluster/bin`; PostgreSQL comes from Debian's
 * packages. `startCluster()` makes a scratch directory, a PostgreSQL cluster in it (its own port and socket), both
 * schemas at the server's version, a server config with free ports, the server, the `default` namespace and Deputy's
 * search attributes; `stop()` stops both and removes the directory. Every process is in its own process group and is
 * killed with it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { chownSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEPUTY_SEARCH_ATTRIBUTES, CLI_TYPE_NAMES } from '../../src/contract/search-attributes.js';
import { freePort } from '../../src/testing/ports.js';
import { findTemporalCli, PROJECT_ROOT } from '../../src/testing/temporal-cli.js';

export const SERVER_VERSION = '1.32.0';

/** The model queue of the cluster suite's fleet check, given one partition in the server's dynamic config. */
export const FLEET_MODEL_QUEUE = 'fleet-model-calls';
const BIN = join(PROJECT_ROOT, '.deputy', 'cluster', 'bin');
const PG_BIN = process.env.DEPUTY_PG_BIN ?? '/usr/lib/postgresql/15/bin';

const run = (file: string, args: string[], options: { user?: string; cwd?: string } = {}) => {
  const [command, argv] =
    options.user && process.getuid?.() === 0 ? ['runuser', ['-u', options.user, '--', file, ...args]] : [file, args];
  return execFileSync(command, argv, { encoding: 'utf8', cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
};

/** The module directory of the server's source (schemas, config templates), from the Go module cache. */
function serverModule(): string {
  const cache = execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim();
  return join(cache, `go.temporal.io/server@v${SERVER_VERSION}`);
}

/** Builds the server and its SQL tool once (minutes on two cores), then reuses them. */
export function ensureServerBuilt(say: (line: string) => void = console.log): { server: string; sql: string } {
  const server = join(BIN, 'server');
  const sql = join(BIN, 'sql');
  for (const [path, pkg] of [
    [server, 'cmd/server'],
    [sql, 'cmd/tools/sql'],
  ] as const) {
    if (existsSync(path)) continue;
    say(`cluster: building go.temporal.io/server/${pkg}@v${SERVER_VERSION} from the Go module proxy (once) …`);
    mkdirSync(BIN, { recursive: true });
    execFileSync('go', ['install', `go.temporal.io/server/${pkg}@v${SERVER_VERSION}`], {
      env: { ...process.env, GOBIN: BIN },
      stdio: 'inherit',
    });
  }
  return { server, sql };
}

/**
 * A free port below 32768: the server stores membership ports in a PostgreSQL `smallint` (an ephemeral port above it
 * stops the server with "out of range for type smallint").
 */
async function lowPort(): Promise<number> {
  for (;;) {
    const port = await freePort(20000 + Math.floor(Math.random() * 12000));
    if (port < 32768) return port;
  }
}

export interface Cluster {
  address: string;
  description: string;
  stop(): Promise<void>;
}

function killGroup(child: ChildProcess | undefined): void {
  if (child?.pid && child.exitCode === null) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Starts PostgreSQL and Temporal Server in a scratch directory; see the module comment. */
export async function startCluster(
  say: (line: string) => void = console.log,
  /** Given the cluster's `stop` before anything starts, so an interrupted start is stopped too. */
  register: (stop: () => Promise<void>) => void = () => undefined,
): Promise<Cluster> {
  const { server, sql } = ensureServerBuilt(say);
  const module = serverModule();
  const dir = mkdtempSync(join(tmpdir(), 'deputy-cluster-'));
  const processes: (ChildProcess | undefined)[] = [];
  const stop = async () => {
    for (const child of [...processes].reverse()) killGroup(child);
    await sleep(200);
    rmSync(dir, { recursive: true, force: true });
  };
  register(stop);
  try {
    const pg = await startPostgres(dir, processes);
    setUpSchemas(sql, module, pg.port);
    const ports = await writeServerConfig(module, dir, pg.port);
    const address = `127.0.0.1:${ports.frontend}`;
    await startServer(server, dir, address, processes);
    registerNamespace(address);
    const description = `Temporal Server ${SERVER_VERSION} on ${pg.version} (SQL visibility)`;
    say(`cluster: ${description} at ${address}`);
    return { address, description, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** PostgreSQL: its own data directory, port and socket; trust auth on loopback for the scratch cluster. */
async function startPostgres(
  dir: string,
  processes: (ChildProcess | undefined)[],
): Promise<{ port: number; version: string }> {
  const root = process.getuid?.() === 0;
  const data = join(dir, 'pg');
  const socket = join(dir, 'sock');
  mkdirSync(socket);
  if (root) {
    const uid = Number(run('id', ['-u', 'postgres']).trim());
    const gid = Number(run('id', ['-g', 'postgres']).trim());
    chownSync(dir, uid, gid);
    chownSync(socket, uid, gid);
  }
  run(join(PG_BIN, 'initdb'), ['-D', data, '-U', 'temporal', '--auth=trust', '-E', 'UTF8'], { user: 'postgres' });
  const port = await freePort();
  const args = [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    socket,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'max_connections=200',
  ];
  processes.push(
    spawn(
      root ? 'runuser' : join(PG_BIN, 'postgres'),
      root ? ['-u', 'postgres', '--', join(PG_BIN, 'postgres'), ...args] : args,
      {
        detached: true,
        stdio: 'ignore',
      },
    ),
  );
  for (let i = 0; ; i++) {
    try {
      run(join(PG_BIN, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port)]);
      break;
    } catch {
      if (i > 100) throw new Error('PostgreSQL did not start');
      await sleep(100);
    }
  }
  return { port, version: run(join(PG_BIN, 'postgres'), ['--version']).trim() };
}

/** Schemas at the server's version, with its own tool and files. */
function setUpSchemas(sql: string, module: string, pgPort: number): void {
  for (const [database, schema] of [
    ['temporal', 'temporal'],
    ['temporal_visibility', 'visibility'],
  ] as const) {
    const tool = [
      '--plugin',
      'postgres12',
      '--ep',
      '127.0.0.1',
      '-p',
      String(pgPort),
      '-u',
      'temporal',
      '--db',
      database,
    ];
    run(sql, [...tool, 'create']);
    run(sql, [...tool, 'setup-schema', '-v', '0.0']);
    run(sql, [...tool, 'update-schema', '-d', join(module, 'schema', 'postgresql', 'v12', schema, 'versioned')]);
  }
}

/** The server's config: the module's development-postgres12 with this cluster's ports. */
async function writeServerConfig(module: string, dir: string, pgPort: number): Promise<Record<string, number>> {
  const ports = Object.fromEntries(
    await Promise.all(
      [
        'frontend',
        'frontendMembership',
        'frontendHttp',
        'history',
        'historyMembership',
        'matching',
        'matchingMembership',
        'worker',
        'workerMembership',
        'pprof',
        'metrics',
      ].map(async (name) => [name, await lowPort()] as const),
    ),
  );
  const template = readFileSync(join(module, 'config', 'development-postgres12.yaml'), 'utf8');
  const config = template
    .replaceAll('127.0.0.1:5432', `127.0.0.1:${pgPort}`)
    .replace('grpcPort: 7233', `grpcPort: ${ports.frontend}`)
    .replace('membershipPort: 6933', `membershipPort: ${ports.frontendMembership}`)
    .replace('httpPort: 7243', `httpPort: ${ports.frontendHttp}`)
    .replace('grpcPort: 7235', `grpcPort: ${ports.matching}`)
    .replace('membershipPort: 6935', `membershipPort: ${ports.matchingMembership}`)
    .replace('grpcPort: 7234', `grpcPort: ${ports.history}`)
    .replace('membershipPort: 6934', `membershipPort: ${ports.historyMembership}`)
    .replace('grpcPort: 7239', `grpcPort: ${ports.worker}`)
    .replace('membershipPort: 6939', `membershipPort: ${ports.workerMembership}`)
    .replace('port: 7936', `port: ${ports.pprof}`)
    .replace('127.0.0.1:8000', `127.0.0.1:${ports.metrics}`)
    .replace('rpcAddress: "localhost:7233"', `rpcAddress: "localhost:${ports.frontend}"`)
    .replace('level: info', 'level: warn')
    .replace('filepath: "config/dynamicconfig/development-sql.yaml"', `filepath: "${join(dir, 'dynamicconfig.yaml')}"`);
  mkdirSync(join(dir, 'config'));
  writeFileSync(join(dir, 'config', 'development.yaml'), config);
  writeFileSync(
    join(dir, 'dynamicconfig.yaml'),
    'frontend.enableUpdateWorkflowExecution:\n  - value: true\nsystem.forceSearchAttributesCacheRefreshOnRead:\n  - value: true\n    constraints: {}\nmatching.enableFairness:\n  - value: true\n' +
      // The fleet's model queue in one partition: each of a queue's partitions dispatches at its share of the rate, and
      // four together overshoot it within a second.
      `matching.numTaskqueueReadPartitions:\n  - value: 1\n    constraints: { taskQueueName: ${FLEET_MODEL_QUEUE} }\n` +
      `matching.numTaskqueueWritePartitions:\n  - value: 1\n    constraints: { taskQueueName: ${FLEET_MODEL_QUEUE} }\n`,
  );
  return ports;
}

/** Starts Temporal Server on the written config and waits until the CLI finds it healthy. */
async function startServer(server: string, dir: string, address: string, processes: (ChildProcess | undefined)[]) {
  const log = openSync(join(dir, 'server.log'), 'a');
  const temporal = spawn(
    server,
    ['--config-file', join(dir, 'config', 'development.yaml'), '--allow-no-auth', 'start'],
    {
      cwd: dir,
      detached: true,
      stdio: ['ignore', log, log],
    },
  );
  processes.push(temporal);
  const serverLog = () => readFileSync(join(dir, 'server.log'), 'utf8').split('\n').slice(-15).join('\n');
  const cli = findTemporalCli();
  if (!cli) throw new Error('the Temporal CLI is needed (npm run setup)');
  for (let i = 0; ; i++) {
    try {
      run(cli, ['operator', 'cluster', 'health', '--address', address]);
      break;
    } catch {
      if (temporal.exitCode !== null)
        throw new Error(`Temporal Server exited with ${temporal.exitCode}:\n${serverLog()}`);
      if (i > 300) throw new Error('Temporal Server did not become healthy');
      await sleep(200);
    }
  }
}

/** The default namespace with Deputy's search attributes. */
function registerNamespace(address: string): void {
  const cli = findTemporalCli();
  if (!cli) throw new Error('the Temporal CLI is needed (npm run setup)');
  run(cli, ['operator', 'namespace', 'create', '-n', 'default', '--retention', '1d', '--address', address]);
  for (const key of DEPUTY_SEARCH_ATTRIBUTES) {
    run(cli, [
      'operator',
      'search-attribute',
      'create',
      '--namespace',
      'default',
      '--name',
      key.name,
      '--type',
      CLI_TYPE_NAMES[key.type]!,
      '--address',
      address,
    ]);
  }
}
