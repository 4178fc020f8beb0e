// A service that installed the `deputy` tarball: plain JavaScript, no TypeScript loader. It starts a dev server, a
// Deputy worker and a run through the package's public entry points, prints the result, and reads the run's tree with
// the installed `deputy` bin.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { DeputyClient } from 'deputy';
import { ScriptedModelServer, startDevServer } from 'deputy/testing';
import { createDeputyWorker, parseConfig } from 'deputy/worker';

Runtime.install({ logger: new DefaultLogger('WARN') });
const server = await startDevServer();
const model = await ScriptedModelServer.start([{ reply: { text: 'answered from an installed package' } }], {
  quiet: true,
});
try {
  const worker = await createDeputyWorker({
    connection: await NativeConnection.connect({ address: server.address }),
    taskQueue: 'package-check',
    childTaskQueue: 'package-check-bg',
    config: parseConfig({ model: 'test-model', prices: { 'test-model': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 } } }),
    model: { apiKey: undefined, baseURL: model.url },
  });
  const deputy = await DeputyClient.connect({ address: server.address, taskQueue: 'package-check' });
  await worker.runUntil(async () => {
    const handle = await deputy.startRun({ task: 'Say hello from the package.' }, { workflowId: 'package-check-run' });
    const result = await deputy.result(handle.workflowId);
    console.log(`result: ${JSON.stringify(result)}`);
    if (result.status !== 'completed' || result.output !== 'answered from an installed package') process.exit(1);
    // Not execFileSync: the worker answering the tree's queries runs in this process and must keep running.
    const tree = await promisify(execFile)('npx', ['--no-install', 'deputy', 'tree', handle.workflowId], {
      env: { ...process.env, TEMPORAL_ADDRESS: server.address },
    });
    console.log(`npx deputy tree:\n${tree.stdout}`);
    if (!tree.stdout.includes('package-check-run') || !tree.stdout.includes('completed')) process.exit(1);
  });
} finally {
  await model.close();
  await server.env.teardown();
}
