/**
 * `npm run deputy -- <command>`: look at runs from the command line.
 *
 *   tree <workflowId>    the run's delegation tree: status, tokens, cost and calls per run
 *   state <workflowId>   the run's `state` query as JSON
 */
import { Client, Connection } from '@temporalio/client';
import { readEnv } from './config.js';
import { loadTree } from './inspect.js';
import { stateQuery } from './messages.js';
import { renderTree } from './tree.js';

const USAGE = 'usage: deputy tree <workflowId> | deputy state <workflowId>';

async function main(argv: string[]): Promise<number> {
  const [command, workflowId] = argv;
  if (!command || !workflowId || !['tree', 'state'].includes(command)) {
    console.error(USAGE);
    return 2;
  }
  const env = readEnv();
  const connection = await Connection.connect({ address: env.temporalAddress });
  try {
    const client = new Client({ connection, namespace: env.temporalNamespace });
    if (command === 'tree') {
      console.log(renderTree(await loadTree(client, workflowId)));
    } else {
      console.log(JSON.stringify(await client.workflow.getHandle(workflowId).query(stateQuery), null, 2));
    }
    return 0;
  } finally {
    await connection.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`deputy: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
