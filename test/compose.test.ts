/**
 * The compose stack, checked where no Docker engine runs: `docker compose config` validates it in CI when
 * the plugin is there; this test checks what that cannot — the server and its schema tools are the version the
 * tests run (the dev server's `temporal --version` names it), every image is pinned, every mounted file exists, and
 * the stack carries the operations services.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { findTemporalCli, PROJECT_ROOT } from '../src/testing/temporal-cli.js';

interface Service {
  image?: string;
  build?: string;
  volumes?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
}
const compose = parse(readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, Service>;
};
const { services } = compose;

describe('R6.1 R6.3 R6.4 docker-compose.yml, the production shape', () => {
  it('runs the Temporal Server version the tests run, its schemas set up by admin-tools of that version, no auto-setup', () => {
    const cli = findTemporalCli();
    expect(cli, 'the Temporal CLI (npm run setup)').toBeDefined();
    const version = execFileSync(cli!, ['--version'], { encoding: 'utf8' });
    const server = /Server (\d+\.\d+\.\d+)/.exec(version)![1]!;
    expect(services.temporal!.image).toBe(`temporalio/server:${server}`);
    expect(services['temporal-schema']!.image).toBe(`temporalio/admin-tools:${server}`);
    expect(services.temporal!.depends_on!['temporal-schema']!.condition).toBe('service_completed_successfully');
    expect(JSON.stringify(compose)).not.toContain('auto-setup');
  });

  it('pins every image, mounts only files that exist, and carries the operations services', () => {
    for (const [name, service] of Object.entries(services)) {
      if (service.image) expect(service.image, name).toMatch(/:(?!latest$)\w[\w.-]*$/);
      else expect(service.build, name).toBe('.');
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('./')) expect(existsSync(join(PROJECT_ROOT, source)), `${name}: ${source}`).toBe(true);
      }
    }
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(['codec-server', 'otel-collector', 'jaeger', 'minio', 'minio-bucket']),
    );
    const worker = services['deputy-worker']!.environment!;
    expect(worker.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://otel-collector:4318');
    expect(worker.DEPUTY_METRICS_ADDRESS).toBe('0.0.0.0:9464');
    expect(worker.DEPUTY_PAYLOAD_STORE).toBe('s3://deputy-payloads/');
    expect(worker.DEPUTY_PAYLOAD_STORE_S3_ENDPOINT).toBe('http://minio:9000');
    // One key ring for every worker: compose refuses to start without it rather than let a worker make its own.
    expect(worker.DEPUTY_MESSAGE_KEYS).toMatch(/^\$\{DEPUTY_MESSAGE_KEYS:\?set DEPUTY_MESSAGE_KEYS=/);
    // R6.10: a versioned worker, so a rebuilt one deploys under open runs.
    expect(worker.DEPUTY_DEPLOYMENT).toBe('${DEPUTY_DEPLOYMENT:-deputy}');
  });
});
