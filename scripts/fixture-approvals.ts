/** The replay fixture of approvals: a grandchild's two calls wait; from the root one is approved, one denied. */
import { setTimeout as sleep } from 'node:timers/promises';
import { forTask, userSays } from '../src/testing/script.js';
import { lastMessageOf, type Scenario } from './fixture-runs.js';

const LEDGER = { name: 'search_notes', arguments: { query: 'the ledger' } };

export const APPROVAL_SCENARIOS: Scenario[] = [
  {
    name: 'approvals-tree',
    input: { task: 'fixture: approvals', scopes: ['tools.calc', 'tools.notes', 'run.delegate'] },
    rules: [
      {
        when: forTask('fixture: approvals', 0),
        reply: {
          toolCalls: [
            { name: 'delegate', arguments: { briefs: [{ task_name: 'team', message: 'fixture approvals team' }] } },
          ],
        },
      },
      {
        when: userSays('fixture approvals team', 0),
        reply: {
          toolCalls: [
            { name: 'delegate', arguments: { briefs: [{ task_name: 'clerk', message: 'fixture approvals clerk' }] } },
          ],
        },
      },
      // Two reads of the ledger in one answer: two requests at once.
      { when: userSays('fixture approvals clerk', 0), reply: { toolCalls: [LEDGER, LEDGER] } },
      { when: userSays('fixture approvals clerk', 2), reply: { text: 'one read, one refused' } },
      {
        when: (r) => userSays('fixture approvals team', 1)(r) && lastMessageOf(r).includes('one read'),
        reply: { text: 'the clerk reported' },
      },
      { when: forTask('fixture: approvals', 1), reply: { text: 'approvals settled' } },
    ],
    async drive(deputy, workflowId) {
      let open = await deputy.approvals(workflowId);
      while (open.length < 2) {
        await sleep(50);
        open = await deputy.approvals(workflowId);
      }
      const [first, second] = open;
      await deputy.decideApproval(workflowId, first!.requestId, 'approve', { reason: 'read it' });
      await deputy.decideApproval(workflowId, second!.requestId, 'deny', { reason: 'once is enough' });
    },
  },
];
