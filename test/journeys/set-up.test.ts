/**
 * `npm test` on a fresh machine: what the tests drive beyond Node (tmux, Chromium) is installed by the test command's
 * own set-up, and where it cannot be, one line says what to install.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { finished, run } from './support.js';

interface PackageJson {
  scripts: Record<string, string>;
}

describe('49 npm test needs nothing installed by hand', () => {
  it('49.9 the set-up npm test runs finds or installs tmux and Chromium', async () => {
    const scripts = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as PackageJson).scripts;
    expect(scripts.pretest).toContain('bash scripts/install-test-tools.sh');
    const command = run('bash', ['scripts/install-test-tools.sh']);
    expect(await finished(command, 600_000), command.output()).toBe(0);
    expect(command.output()).toMatch(/^install-test-tools: tmux: (present|installed)$/m);
    expect(command.output()).toMatch(/^install-test-tools: chromium: (present|installed)$/m);
  });

  it('49.9 where it cannot install, it says in one line per program what to install, and npm test goes on', async () => {
    // Nobody, who cannot install anything, on a machine whose Chromium is not where it is told to look.
    const command = run(
      'setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', 'bash', 'scripts/install-test-tools.sh'],
      { CHROMIUM_PATH: '/nonexistent/chromium', HOME: '/tmp' },
    );
    expect(await finished(command, 60_000), command.output()).toBe(0);
    expect(command.output()).toContain(
      "install-test-tools: chromium is missing and could not be installed here (needs root, passwordless sudo and apt-get): install Debian's package chromium, or set CHROMIUM_PATH to a Chromium; the tests that drive it fail until then",
    );
    expect(command.output()).toMatch(/^install-test-tools: tmux: present$/m);
  });
});
