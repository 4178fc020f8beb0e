/**
 * `npm run gates:mutations`: proves each delegate gate can fail. For every gate, it breaks the rule the gate checks
 * (one or more edits to the source) in a copy of the project, runs that gate alone there against a real dev server,
 * expects it to fail, and puts the copy back. The work tree is never written to, so an interrupted run leaves nothing
 * broken. Prints one line per gate; exits non-zero if any gate survived its mutation. Not part of CI (it takes a few
 * minutes); its last result is in docs/activation.md.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { findTemporalCli, PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { MUTATIONS } from './gate-mutation-list.js';

/** A copy of the project's tracked files (its dependencies linked), where the mutations are made. */
function copyOfProject(): string {
  const copy = mkdtempSync(join(tmpdir(), 'deputy-gate-mutations-'));
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).split('\0');
  for (const file of files.filter(Boolean)) {
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    copyFileSync(join(PROJECT_ROOT, file), join(copy, file));
  }
  symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(copy, 'node_modules'));
  return copy;
}

const copy = copyOfProject();
const env = { ...process.env, TEMPORAL_CLI_PATH: findTemporalCli() ?? '' };
let survived = 0;
let tried = 0;
const only = process.env.GATES?.split(',');
try {
  // A key is a gate's id, or its id and the name of one more way to break it (`G6 tokens`): each is a mutant of its own.
  const gateOf = (key: string) => key.split(' ')[0]!;
  for (const [gate, { rule, edits }] of Object.entries(MUTATIONS).filter(([g]) => !only || only.includes(gateOf(g)))) {
    const originals = new Map<string, string>();
    try {
      for (const [file, from, to] of edits) {
        const path = join(copy, file);
        if (!originals.has(path)) originals.set(path, readFileSync(path, 'utf8'));
        const current = readFileSync(path, 'utf8');
        if (!current.includes(from)) throw new Error(`${gate}: "${from.slice(0, 60)}" is not in ${file}`);
        writeFileSync(path, current.replace(from, to));
      }
      const run = spawnSync(
        process.execPath,
        [
          'node_modules/vitest/vitest.mjs',
          'run',
          '--config',
          'vitest.gates.config.ts',
          '-t',
          `^R5.5 delegate gates.* ${gateOf(gate)} `,
          '--testTimeout',
          '25000',
          '--reporter',
          'dot',
        ],
        { cwd: copy, encoding: 'utf8', env },
      );
      tried += 1;
      const failed = run.status !== 0 && /\d+ failed/.test(run.stdout + run.stderr);
      if (!failed) survived += 1;
      console.log(`${gate.padEnd(10)} ${failed ? 'fails when broken' : 'SURVIVED'}: ${rule}`);
      // What the gate's run said, so a survivor (or a run that never got to its gate) can be read.
      if (!failed) console.log((run.stdout + run.stderr).trim().split('\n').slice(-8).join('\n'));
    } finally {
      for (const [path, text] of originals) writeFileSync(path, text);
    }
  }
} finally {
  rmSync(copy, { recursive: true, force: true });
}
console.log(`\n${tried - survived} of ${tried} gates fail when their rule is broken`);
process.exit(survived === 0 ? 0 : 1);
