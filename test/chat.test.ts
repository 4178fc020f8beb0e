/**
 * The terminal chat (`npm run demo -- --chat`), driven end to end in a real pseudo-terminal (tmux): type, read the
 * screen. The person orders, the conversation dispatches a researcher in the background and keeps talking, the
 * researcher's question reaches the person, the answer and an interjection go down, the result comes back, Ctrl-C
 * ends it cleanly. The screen it leaves is the transcript of docs/chat.md (written to .deputy/chat-transcript.txt).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { CHAT_LINES } from '../src/demo/chat-script.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';

const SOCKET = `deputy-chat-${randomUUID().slice(0, 8)}`;
const queue = `chat-${randomUUID().slice(0, 8)}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' });
/** The whole screen, scrollback included, wrapped lines joined. */
const screen = () => tmux('capture-pane', '-p', '-J', '-S', '-500', '-t', 'chat');
const type = (text: string) => {
  tmux('send-keys', '-t', 'chat', '-l', text);
  tmux('send-keys', '-t', 'chat', 'Enter');
};

afterAll(() => {
  spawnSync('tmux', ['-L', SOCKET, 'kill-server']);
});

describe('R2.14 R3.7 R3.9 R7.3 the terminal chat', () => {
  it('R2.14 R3.7 R3.9 R7.3 npm run demo -- --chat: talk while a background child works, its question reaches the person, the answer and an interjection go down, its request for approval reaches the person, its result comes back, Ctrl-C ends cleanly', async () => {
    expect(
      spawnSync('tmux', ['-V']).status,
      'this test needs tmux: npm test installs it as root (scripts/install-test-tools.sh); else apt-get install tmux',
    ).toBe(0);
    const command = [
      'env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u DEPUTY_CONFIG',
      `TEMPORAL_ADDRESS=${inject('temporalAddress')} DEPUTY_TASK_QUEUE=${queue} DEPUTY_BACKGROUND_TASK_QUEUE=${queue}-bg`,
      'npm run --silent demo -- --chat; echo "[chat exited $?]"; sleep 600',
    ].join(' ');
    tmux('new-session', '-d', '-s', 'chat', '-x', '200', '-y', '50', '-c', PROJECT_ROOT, command);
    /** Waits until the screen shows `text`; on a timeout, fails with the screen as it is. */
    const shows = async (text: string | RegExp, timeout = 30_000) => {
      const found = (now: string) => (typeof text === 'string' ? now.includes(text) : text.test(now));
      for (const until = Date.now() + timeout; Date.now() < until;) {
        if (found(screen())) return;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const now = screen();
      expect(found(now), `the screen does not show ${String(text)}:\n${now}`).toBe(true);
    };

    await shows('Ctrl-C ends the conversation.', 60_000);
    type(CHAT_LINES.order);
    await shows('deputy> The researcher is on it. Ask me anything meanwhile.');
    expect(screen()).toContain('  ↳ delegates "research" in the background');
    // The person talks while the child works.
    type(CHAT_LINES.meanwhile);
    await shows("deputy> The researcher is still working; I'll tell you as soon as it reports.");
    // The child's question reaches the person, and the live tree shows who waits for what.
    await shows('  ? "research" asks (q1.1): Standard or express shipping?');
    await shows('deputy> The researcher asks: standard or express shipping?');
    await shows(/└─ research +waiting_for_answer [\s\S]*?background[\s·│]*asks q1\.1: Standard or express shipping\?/);
    type(CHAT_LINES.answer);
    await shows('  → answer to "research": Standard shipping.');
    await shows('  → interjection to "research": The customer also wants the order gift-wrapped.');
    // The researcher's request to save a file climbs to the person, who approves it.
    await shows(
      / {2}⚑ "research" waits for approval \(a1\.1\): save_artifact \{"name":"findings\.md".* — \/approve or \/deny <reason>/,
    );
    await shows(
      'deputy> The researcher asks to save its findings as findings.md: type /approve, or /deny with a reason.',
    );
    // The tree is read from the runs themselves at the chat's next look: under load, a look after the message.
    await shows(/└─ research +waiting_for_approval /);
    type('/approve');
    await shows('  ✓ you approved a1.1 (save_artifact in "research")');
    await shows('  ✓ "research" ended: completed (its result is untrusted data)');
    await shows('deputy> The research is in: 8% Springfield sales tax and $4.99 standard shipping.');
    expect(screen()).toMatch(/└─ research +(running|completed) [\s\S]*?background[\s·│]*1 interjection/);

    tmux('send-keys', '-t', 'chat', 'C-c');
    await shows('[chat exited 0]', 60_000);
    const final = screen();
    expect(final).toContain('(ending the conversation …)');
    expect(final).toMatch(/status: completed\n/);
    expect(final).toMatch(/\n└─ research +completed /);
    mkdirSync(join(PROJECT_ROOT, '.deputy'), { recursive: true });
    writeFileSync(join(PROJECT_ROOT, '.deputy', 'chat-transcript.txt'), final.trimEnd() + '\n');

    // What the screen said is what Temporal recorded: the child got the answer and the interjection, which
    // carries the dialogue since its dispatch (the concierge forks by default, R3.10).
    const workflowId = /chat (chat-\S+):/.exec(final)![1]!;
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const client = new Client({ connection });
      const history = await client.workflow.getHandle(`${workflowId}/research-1`).fetchHistory();
      // The two calls of one turn run in parallel: either signal may be first.
      const signals = new Map(
        (history.events ?? []).flatMap((event) => {
          const signal = event.workflowExecutionSignaledEventAttributes;
          const data = signal?.input?.payloads?.[0]?.data;
          return signal?.signalName && data
            ? [[signal.signalName, JSON.parse(Buffer.from(data).toString('utf8')) as Record<string, unknown>] as const]
            : [];
        }),
      );
      expect([...signals.keys()].sort()).toEqual(['deputy.answer', 'deputy.interjection']);
      // Each travels in an envelope signed by a worker: sender, receiver, id, body and signature.
      expect(signals.get('deputy.answer')).toEqual({
        from: workflowId,
        to: `${workflowId}/research-1`,
        id: 'answer:q1.1',
        body: { questionId: 'q1.1', answer: 'Standard shipping.' },
        sig: expect.stringMatching(/^k1\.[A-Za-z0-9_-]{22}$/) as unknown,
      });
      expect((signals.get('deputy.interjection')?.body as { content: string } | undefined)?.content).toMatch(
        /^## Parent Chat Context \(continued\)\n[\s\S]*## Message from your parent\nThe customer also wants the order gift-wrapped\.$/,
      );
    } finally {
      await connection.close();
    }
  }, 150_000);
});
