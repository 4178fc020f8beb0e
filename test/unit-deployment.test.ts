import { describe, expect, it } from 'vitest';
import { ConfigError } from '../src/contract/errors.js';
import { deploymentBuildId, deploymentFromEnv, deploymentOptions } from '../src/worker/deployment.js';

const bundle = { code: 'workflow code' };

describe('R6.10 a worker as a version of a Worker Deployment', () => {
  it('R6.10 unversioned unless DEPUTY_DEPLOYMENT names a deployment; DEPUTY_BUILD_ID alone is refused', () => {
    expect(deploymentFromEnv({})).toBeUndefined();
    expect(deploymentFromEnv({ DEPUTY_DEPLOYMENT: '  ' })).toBeUndefined();
    expect(() => deploymentFromEnv({ DEPUTY_BUILD_ID: 'v2' })).toThrow(
      'DEPUTY_BUILD_ID is set but DEPUTY_DEPLOYMENT is not: name the deployment it belongs to',
    );
    expect(deploymentFromEnv({ DEPUTY_DEPLOYMENT: 'acme-agents', DEPUTY_BUILD_ID: 'v2.1' })).toEqual({
      name: 'acme-agents',
      buildId: 'v2.1',
    });
  });

  it('R6.10 names Temporal would refuse or misread are said at start, every problem at once', () => {
    let caught: unknown;
    try {
      deploymentFromEnv({ DEPUTY_DEPLOYMENT: 'acme:agents', DEPUTY_BUILD_ID: 'v 2' });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).problems).toEqual([
      'DEPUTY_DEPLOYMENT="acme:agents": use letters, digits, _ and - (at most 200)',
      'DEPUTY_BUILD_ID="v 2": use letters, digits, _ - + : = . (at most 200)',
    ]);
    expect(() => deploymentFromEnv({ DEPUTY_DEPLOYMENT: 'x'.repeat(201) })).toThrow(ConfigError);
  });

  it('R6.10 the build id changes with the workflow code and the key, and an operator may name it; runs are pinned', () => {
    const derived = deploymentBuildId({ name: 'd' }, bundle, 'k1/abc');
    expect(derived).toMatch(/^\d+\.\d+\.\d+-deputy\+[0-9a-f]{12}\+key:k1\/abc$/);
    expect(deploymentBuildId({ name: 'd' }, { code: 'other code' }, 'k1/abc')).not.toBe(derived);
    expect(deploymentBuildId({ name: 'd' }, bundle, 'k2/def')).not.toBe(derived);
    expect(deploymentBuildId({ name: 'd', buildId: 'release-7' }, bundle, 'k1/abc')).toBe('release-7');
    expect(deploymentOptions({ name: 'd', buildId: 'b' }, bundle, 'k1/abc')).toEqual({
      version: { deploymentName: 'd', buildId: 'b' },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    });
  });
});
