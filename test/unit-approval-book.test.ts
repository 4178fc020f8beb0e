/**
 * One approval request as a state machine (R7.4, R7.6): it closes once, and nothing that arrives late — a proof that
 * failed its check, a deadline, a second decision — writes over how it closed.
 */
import { describe, expect, it } from 'vitest';
import { OwnRequest } from '../workflows/approval-book.js';
import type { ApprovalRequest } from '../src/contract/approvals.js';

const request: ApprovalRequest = {
  requestId: 'a1.1',
  run: 'run-1',
  firstRunId: 'first',
  path: '',
  tool: 'send_email',
  digest: 'd',
  preview: '{}',
  arguments: '{}',
  argumentsChars: 2,
  why: 'always',
  requestedAt: '2026-12-07T00:00:00.000Z',
  deadline: '2026-12-07T00:01:00.000Z',
};

describe('R7.4 R7.6 an approval request closes once', () => {
  it('R7.4 a decision being checked refuses a second one; a proof that fails leaves it open', () => {
    const own = new OwnRequest(request);
    own.startDeciding();
    expect(own.closedWords()).toBe('request a1.1 is being decided already');
    expect(() => own.startDeciding()).toThrow('approval request a1.1 is deciding, not open');
    own.reopen();
    expect(own.status).toBe('open');
    expect(own.pending).toBe(true);
  });

  it('R7.4 a request cancelled while its proof was checked stays cancelled when the proof then fails', () => {
    const own = new OwnRequest(request);
    own.startDeciding();
    own.cancel();
    own.reopen();
    expect(own.status).toBe('cancelled');
    expect(own.pending).toBe(false);
    expect(own.closedWords()).toBe('request a1.1 is closed: its run stopped waiting (cancelled)');
    expect(() => own.decide({ status: 'approved', by: 'alice' })).toThrow('is cancelled, not deciding');
  });

  it('R7.6 the deadline decides an open request; a decision after it is refused', () => {
    const expired = new OwnRequest(request);
    expired.deadlinePassed('deny');
    expect(expired.status).toBe('expired');
    expect(expired.closedWords()).toBe(
      'request a1.1 is closed: expired with no decision (taken as approvals.onTimeout)',
    );
    expect(expired.deniedWords('send_email')).toContain('it expired and was denied (approvals.onTimeout)');
    expect(() => expired.startDeciding()).toThrow('is expired, not open');

    const approved = new OwnRequest(request);
    approved.deadlinePassed('approve');
    expect(approved.status).toBe('approved');
    expect(approved.closedWords()).toBe('request a1.1 is closed: approved by timeout');
    expect(approved.proof).toBeUndefined();
  });

  it('R7.6 a decision being checked at the deadline is waited for: it holds if its check passes, else the deadline decides', () => {
    const held = new OwnRequest(request);
    held.startDeciding();
    held.deadlinePassed('deny');
    expect(held.status).toBe('deciding');
    held.decide({ status: 'approved', by: 'alice' });
    expect(held.status).toBe('approved');

    const failed = new OwnRequest(request);
    failed.startDeciding();
    failed.deadlinePassed('deny');
    failed.reopen();
    expect(failed.status).toBe('expired');
    expect(() => failed.decide({ status: 'approved', by: 'alice' })).toThrow('is expired, not deciding');

    const closed = new OwnRequest(request);
    closed.startDeciding();
    closed.decide({ status: 'denied', by: 'bob' });
    closed.deadlinePassed('approve');
    expect(closed.status).toBe('denied');
  });

  it('R7.4 an approval keeps its proof, a denial its reason; a closed request cannot be decided again', () => {
    const approved = new OwnRequest(request);
    approved.startDeciding();
    approved.decide({ status: 'approved', by: 'alice', proof: { approver: 'alice', proof: 'p' } });
    expect(approved.proof).toEqual({ approver: 'alice', proof: 'p' });
    expect(() => approved.decide({ status: 'denied', by: 'bob' })).toThrow('is approved, not deciding');

    const denied = new OwnRequest(request);
    denied.startDeciding();
    denied.decide({ status: 'denied', by: 'bob', reason: 'not today' });
    expect(denied.proof).toBeUndefined();
    expect(denied.closedWords()).toBe('request a1.1 is closed: denied by bob');
    expect(denied.deniedWords('send_email')).toBe(
      'not run: bob denied approval request a1.1 for send_email: not today. Do not try the same call again unless asked to.',
    );
    denied.cancel();
    expect(denied.status).toBe('denied');
  });
});
