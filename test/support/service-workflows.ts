/** The workflows module of a service that already runs a Temporal Worker and adds Deputy to it (the plugin test). */
import { proxyActivities } from '@temporalio/workflow';

export { agentRun } from '../../workflows/index.js';

const { greet } = proxyActivities<{ greet(name: string): Promise<string> }>({ startToCloseTimeout: '10 seconds' });

/** The service's own workflow, which must keep working beside Deputy's. */
export async function greeting(name: string): Promise<string> {
  return greet(name);
}
