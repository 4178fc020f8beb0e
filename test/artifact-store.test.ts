/**
 * R2.18 The artifact store on its own: what a run saves comes back byte for byte, named by its digest, from a directory
 * or the configured payload store; a damaged or lost artifact is an error naming it, never other bytes.
 */
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ArtifactStore, MAX_ARTIFACT_BYTES } from '../src/ops/artifacts.js';

describe('R2.18 the artifact store', () => {
  it('R2.18 saves text as an artifact with id, media type, size and digest, and reads it back checked', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deputy-artifacts-'));
    const store = ArtifactStore.fromEnv({ DEPUTY_PAYLOAD_STORE: dir });
    const text = '| city | rate |\n| --- | --- |\n| Springfield | 8% |\n';
    const ref = await store.save('rates.md', 'text/markdown', text);
    expect(ref).toMatchObject({
      id: 'art-353031f142d9cbe2',
      name: 'rates.md',
      mediaType: 'text/markdown',
      size: 51, // sha256sum and wc -c of the same text
      digest: 'sha256:353031f142d9cbe28abf167a7e6491215f8c557f71c49e3aa4eca5092808e725',
    });
    expect(await store.read(ref)).toBe(text);
    // The same bytes saved again are the same artifact.
    expect(await store.save('copy.md', 'text/markdown', text)).toMatchObject({ id: ref.id, key: ref.key });

    // A file changed in the store is refused, naming the artifact.
    const [shard] = readdirSync(dir);
    writeFileSync(join(dir, shard!, ref.key), 'other bytes');
    await expect(store.read(ref)).rejects.toThrow(/damaged/);
    await expect(store.read({ ...ref, key: 'f'.repeat(64) })).rejects.toThrow(/is not in the store/);
  });

  it('R2.18 without DEPUTY_PAYLOAD_STORE a directory of the worker’s holds them; past the bound is refused', async () => {
    const base = mkdtempSync(join(tmpdir(), 'deputy-artifacts-base-'));
    const store = ArtifactStore.fromEnv({}, base);
    const ref = await store.save('a.txt', 'text/plain', 'hello');
    expect(readdirSync(join(base, '.deputy', 'artifacts'))).toHaveLength(1);
    expect(await store.read(ref)).toBe('hello');
    await expect(store.save('big.txt', 'text/plain', 'x'.repeat(MAX_ARTIFACT_BYTES + 1))).rejects.toThrow(
      /past the 16777216 one may be/,
    );
    expect(() => ArtifactStore.fromEnv({ DEPUTY_PAYLOAD_STORE: 'relative' })).toThrow(/not an absolute path/);
  });
});
