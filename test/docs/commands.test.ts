/**
 * Every shell command the README and docs/ show, run as shown: each fenced `sh` block, line by line, against the
 * suite's dev server with a worker on the documented task queue (`deputy`) and the scripted model. A block says in
 * an HTML comment right above it what the test needs to know:
 *
 *   <!-- docs-test
 *   skip <command> — <why it is not run here, and what checks it instead>
 *   until <command> — <a line it prints once it is up> (then Ctrl-C, as a person would)
 *   prints <command> — <a line it prints>
 *   as <placeholder> <value>
 *   env <NAME> <value>     (for every command of the block; `<scripted-model>` is the scripted model's URL)
 *   -->
 *
 * A command the comment does not name must exit 0.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { lastMessage } from '../../src/testing/script.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { createHarness, type Harness } from '../support/harness.js';
import { testKeyRing } from '../support/worker-process.js';
import { finished, run, untilPrinted, type Command } from '../journeys/support.js';

interface Block {
  where: string;
  commands: string[];
  skip: Map<string, string>;
  until: Map<string, string>;
  prints: Map<string, string>;
  placeholders: Map<string, string>;
  env: Map<string, string>;
}

/** The docs in the order their commands build on each other: the contract's block starts the run others read. */
const DOCS = [
  'docs/contract.md',
  'README.md',
  ...readdirSync(join(PROJECT_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md') && f !== 'contract.md')
    .sort()
    .map((f) => `docs/${f}`),
];

function blocks(path: string): Block[] {
  const text = readFileSync(join(PROJECT_ROOT, path), 'utf8');
  const found: Block[] = [];
  for (const match of text.matchAll(/(?:<!-- docs-test\n([\s\S]*?)-->\n\n?)?```(?:sh|bash|shell)\n([\s\S]*?)```/g)) {
    const line = text.slice(0, match.index).split('\n').length;
    const block: Block = {
      where: `${path}:${line}`,
      // A trailing backslash continues the command on the next line; a comment after two spaces is the docs' note.
      commands: match[2]!
        .replace(/\\\n\s*/g, '')
        .split('\n')
        .map((l) => l.replace(/\s+#\s.*$/, '').trim())
        .filter(Boolean),
      skip: new Map(),
      until: new Map(),
      prints: new Map(),
      placeholders: new Map(),
      env: new Map(),
    };
    for (const directive of (match[1] ?? '').split('\n').filter(Boolean)) {
      const as = /^as (<[^>]+>) (.+)$/.exec(directive);
      if (as) {
        block.placeholders.set(as[1]!, as[2]!);
        continue;
      }
      const env = /^env ([A-Z_]+) (.+)$/.exec(directive);
      if (env) {
        block.env.set(env[1]!, env[2]!);
        continue;
      }
      const named = /^(skip|until|prints) (.+?) — (.+)$/.exec(directive);
      if (!named) throw new Error(`${block.where}: unreadable docs-test line "${directive}"`);
      const [, kind, command, value] = named as unknown as [string, 'skip' | 'until' | 'prints', string, string];
      if (!block.commands.includes(command)) throw new Error(`${block.where}: "${command}" is not in the block`);
      block[kind].set(command, value);
    }
    found.push(block);
  }
  return found;
}

const stateDir = mkdtempSync(join(tmpdir(), 'deputy-docs-'));
let harness: Harness;
const started: Command[] = [];

beforeAll(async () => {
  harness = await createHarness(
    [
      {
        name: 'the contract example',
        when: (r) => lastMessage(r).includes('What is 17 * 23?'),
        reply: { text: '391' },
        times: 10,
      },
    ],
    { taskQueue: 'deputy' },
  );
  await harness.startWorker();
});
afterAll(async () => {
  for (const command of started) command.kill();
  await harness?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

const env = () => ({
  TEMPORAL_ADDRESS: inject('temporalAddress'),
  DEPUTY_STATE_DIR: stateDir,
  // What a user has: the Temporal CLI the setup installed is .deputy/bin/temporal, not on their PATH.
  PATH: (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => dir !== join(PROJECT_ROOT, '.deputy', 'bin'))
    .join(':'),
  OPENAI_API_KEY: undefined,
  OPENAI_BASE_URL: undefined,
  ...testKeyRing(),
});

describe('49 every command the docs show works as they say', () => {
  const all = DOCS.flatMap(blocks);

  it('49 the docs show commands, and every skipped one says why', () => {
    expect(all.length).toBeGreaterThan(5);
    for (const block of all)
      for (const [command, why] of block.skip) expect(why.length, `${block.where}: ${command}`).toBeGreaterThan(20);
  });

  for (const block of all) {
    it(`49 ${block.where}: ${block.commands.filter((c) => !block.skip.has(c)).join(' ; ') || '(every command marked)'}`, async () => {
      for (const shown of block.commands) {
        if (block.skip.has(shown)) continue;
        let command = shown;
        for (const [placeholder, value] of block.placeholders) command = command.replaceAll(placeholder, value);
        expect(command, `${block.where}: a placeholder without a value`).not.toMatch(/<[a-zA-Z]+>/);
        const blockEnv = Object.fromEntries(
          [...block.env].map(([name, value]) => [name, value.replaceAll('<scripted-model>', harness.model.url)]),
        );
        const running = run('bash', ['-c', command], { ...env(), ...blockEnv });
        started.push(running);
        const ready = block.until.get(shown);
        if (ready) {
          await untilPrinted(running, new RegExp(`^${escape(ready)}`, 'm'), 120_000);
          running.interrupt();
          await finished(running, 30_000);
          continue;
        }
        expect(await finished(running, 150_000), `${block.where}: ${command}\n${running.output()}`).toBe(0);
        const prints = block.prints.get(shown);
        if (prints) expect(running.output(), `${block.where}: ${command}`).toContain(prints);
      }
    });
  }
});

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
