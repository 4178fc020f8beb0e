/**
 * R2.18 Where a run takes artifact references from, and the seal that binds each to the run that saved it: a tool's
 * save only for the run itself, a child's result only for that child's subtree, a brief only from what the parent can
 * read; a reference changed in any field reads nothing.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunArtifacts } from '../workflows/artifacts.js';
import { artifactAccess, ArtifactStore } from '../src/ops/artifacts.js';
import { MessageKeys } from '../src/ops/message-keys.js';
import type { ArtifactRef } from '../src/contract/artifacts.js';
import { parse } from 'yaml';
import { parseConfig } from '../src/config/schema.js';
import { unknownPresetTools } from '../src/config/load.js';
import { builtinTools } from '../activities/builtin-tools.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import type { RunResult } from '../src/contract/run.js';
import { childInput } from '../src/rules/run-start.js';
import { endOfResult, reportedArtifacts } from '../src/rules/child-end.js';
import { ZERO_USAGE } from '../src/rules/usage.js';
import { describeWatchEvent } from '../src/client/watch-view.js';

const keys = new MessageKeys([['k1', Buffer.alloc(32, 7)]]);
const store = () => ArtifactStore.fromEnv({ DEPUTY_PAYLOAD_STORE: mkdtempSync(join(tmpdir(), 'deputy-art-unit-')) });
const ref = (id: string, savedBy: string): ArtifactRef => ({
  id: `art-${id.padStart(16, '0')}`,
  name: `${id}.txt`,
  mediaType: 'text/plain',
  size: 1,
  digest: `sha256:${'0'.repeat(64)}`,
  key: id,
  savedBy,
  seal: 'k1.x',
});

describe('R2.18 a run’s artifacts', () => {
  it('R2.18 takes a save only for itself and a child’s only from that child’s subtree', () => {
    const run = new RunArtifacts('root', undefined, undefined);
    expect(run.saved([ref('1', 'root'), ref('2', 'other'), ref('3', 'root/writer-1')])).toEqual([ref('1', 'root')]);
    // writer-10 is not inside writer-1, however its id begins.
    const kept = run.handedBack('root/writer-1', [
      ref('4', 'root/writer-1'),
      ref('5', 'root/writer-1/deep-1'),
      ref('6', 'root/writer-10'),
      ref('7', 'root'),
    ]);
    expect(kept).toEqual([ref('4', '').id, ref('5', '').id]);
    expect(run.produced.map((r) => r.id)).toEqual([ref('1', '').id, ref('4', '').id, ref('5', '').id]);
    // The same reference twice is one.
    run.saved([ref('1', 'root')]);
    expect(run.produced).toHaveLength(3);
    expect(run.listed().artifacts).toHaveLength(3);
    expect(new RunArtifacts('x', undefined, undefined).listed()).toEqual({});
  });

  it('R2.18 a brief passes on only what its run can read, and a new segment keeps both lists', () => {
    const given = [ref('9', 'elsewhere/writer-1')];
    const run = new RunArtifacts('root/reader-2', given, undefined);
    run.saved([ref('1', 'root/reader-2')]);
    expect(run.forBrief([ref('9', '').id, ref('1', '').id])).toEqual({
      ok: true,
      refs: [given[0], ref('1', 'root/reader-2')],
    });
    expect(run.forBrief(undefined)).toEqual({ ok: true, refs: [] });
    const refused = run.forBrief([ref('8', '').id]);
    expect(refused).toEqual({
      ok: false,
      error: `brief names artifacts this run cannot read (art-0000000000000008); a brief may pass on only its own run's artifacts, its children's or its brief's: art-0000000000000001 "1.txt" (text/plain, 1 bytes), art-0000000000000009 "9.txt" (text/plain, 1 bytes)`,
    });
    const next = new RunArtifacts('root/reader-2', undefined, run.toResume().artifacts);
    expect(next.readable).toEqual(run.readable);
    expect(next.produced).toEqual(run.produced);
  });

  it('R2.18 a sealed reference reads its bytes; changed in any field, or unlisted, it reads nothing', async () => {
    const kept = store();
    const { access, saved } = artifactAccess(kept, keys, 'root/writer-1', []);
    const made = await access.save('rates.md', 'text/markdown', 'rate 8%');
    expect(saved).toEqual([made]);
    expect(made.savedBy).toBe('root/writer-1');
    expect(made.seal).toMatch(/^k1\./);

    const reader = (readable: ArtifactRef[]) => artifactAccess(kept, keys, 'root', readable).access;
    expect(await reader([made]).read(made.id)).toEqual({ ref: made, content: 'rate 8%' });
    for (const changed of [
      { savedBy: 'root' },
      { name: 'other.md' },
      { mediaType: 'text/html' },
      { key: `${made.key.slice(0, -1)}0` },
    ]) {
      await expect(reader([{ ...made, ...changed }]).read(made.id)).rejects.toThrow(/carries no seal of a worker/);
    }
    await expect(reader([]).read(made.id)).rejects.toThrow(
      `no artifact ${made.id} is readable by this run; readable: none`,
    );
    // Another ring's seal is no seal.
    const other = artifactAccess(kept, new MessageKeys([['k1', Buffer.alloc(32, 8)]]), 'root', [made]).access;
    await expect(other.read(made.id)).rejects.toThrow(/carries no seal of a worker/);
  });
});

describe('R2.18 the configuration docs/delegation.md shows for artifacts', () => {
  it('R2.18 parses, and offers each preset the artifact tools it lists', () => {
    const docs = readFileSync(join(PROJECT_ROOT, 'docs', 'delegation.md'), 'utf8');
    const section = docs.slice(docs.indexOf('## Artifacts'));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)![1]!;
    const config = parseConfig(parse(yaml));
    expect(unknownPresetTools(config, new Set(builtinTools().map((t) => t.name)))).toEqual([]);
    expect(config.presets.map((p) => [p.id, p.tools.filter((t) => t.includes('artifact'))])).toEqual([
      ['assistant', ['save_artifact', 'read_artifact']],
      ['reporter', ['save_artifact']],
    ]);
    expect(config.grantableScopes).toEqual(expect.arrayContaining(['artifacts.read', 'artifacts.write']));
    expect(
      builtinTools()
        .filter((t) => t.name.includes('artifact'))
        .map((t) => [t.name, t.scopes]),
    ).toEqual([
      ['save_artifact', ['artifacts.write']],
      ['read_artifact', ['artifacts.read']],
    ]);
  });
});

describe('R2.18 artifacts in a child’s input and end', () => {
  const made = ref('1', 'p/writer-1');
  const result = (extra: Partial<RunResult>): RunResult => ({
    status: 'completed',
    output: 'done',
    usage: ZERO_USAGE,
    sessionId: 'p/writer-1',
    ...extra,
  });

  it('R2.18 a brief’s artifacts travel in the sealed origin, only when it gives some', () => {
    const plan = {
      brief: { task_name: 'reader', message: 'read it' },
      preset: 'assistant',
      composition: {
        definition: { id: 'assistant', persona: 'p', tools: [], skills: {}, contextRendering: 'block' as const },
        revision: 'r',
        selected: true,
      },
      contextRendering: 'block' as const,
      contextMode: 'none' as const,
      toolGrant: { tools: [], scopes: [] },
      limits: {},
      reservation: { tokens: 0, costMicroUsd: 0 },
    };
    const parent = { sessionId: 'p', rootId: 'p', depth: 0, tenant: undefined, composition: {} as never };
    const input = (artifacts?: ArtifactRef[]) =>
      childInput({ ...plan, ...(artifacts && { artifacts }) }, plan.brief, 1, undefined, parent, undefined);
    expect(input([made]).origin?.artifacts).toEqual([made]);
    expect(input([]).origin).not.toHaveProperty('artifacts');
    expect(input().origin).not.toHaveProperty('artifacts');
  });

  it('R2.18 a child’s end carries what its result lists, a failure’s too; nothing when it lists none', () => {
    expect(endOfResult(result({ artifacts: [made] }), undefined).artifacts).toEqual([made]);
    expect(endOfResult(result({}), undefined)).not.toHaveProperty('artifacts');
    expect(endOfResult(result({ status: 'failed', artifacts: [made] }), undefined).artifacts).toEqual([made]);
    expect(reportedArtifacts(result({ artifacts: [made] }))).toEqual({ artifacts: [made] });
    expect(reportedArtifacts(result({}))).toEqual({});
    expect(reportedArtifacts({ not: 'a result', artifacts: [made] })).toEqual({});
  });

  it('R2.18 a watch line says which artifact was saved', () => {
    const event = { run: 'r', parent: null, seq: 1, at: '', cursor: '' };
    expect(
      describeWatchEvent({
        ...event,
        type: 'artifact/saved',
        id: made.id,
        name: 'rates.md',
        mediaType: 'text/markdown',
        size: 51,
      }),
    ).toBe(`saved artifact ${made.id} "rates.md" (text/markdown, 51 B)`);
  });
});
