/**
 * The command lines of the helper scripts (`npm run demo`, `ui`, `worker`, `web`, `register-search-attributes`):
 * `--help` says what the script does, its options and the environment it reads; anything it does not know is refused
 * in one line (exit 2) before it starts anything.
 */
import { parseArgs } from 'node:util';

export interface ScriptUsage {
  /** The npm script's name. */
  name: string;
  /** What it does, in a line or two. */
  does: string;
  /** Its options: name (without `--`) → what it does; a value-taking option ends its name with ` <value>`. */
  options?: Record<string, string>;
  /** The environment variables it reads, with what each sets. */
  environment?: Record<string, string>;
}

/** The options given, by name; exits after `--help` or on a mistake. */
export function scriptArgs(usage: ScriptUsage, argv = process.argv.slice(2)): Record<string, string | boolean> {
  const declared = Object.keys(usage.options ?? {});
  const options: Record<string, { type: 'boolean' | 'string'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
  };
  for (const d of declared) {
    const [name, value] = d.split(' ');
    options[name!] = { type: value ? 'string' : 'boolean' };
  }
  let values: Record<string, string | boolean | undefined>;
  try {
    const parsed = parseArgs({ args: argv, options, allowPositionals: false, strict: true });
    values = parsed.values;
  } catch (err) {
    console.error(
      `npm run ${usage.name}: ${(err as Error).message.split(/\.\s/)[0]}; npm run ${usage.name} -- --help lists its options`,
    );
    process.exit(2);
  }
  if (values.help) {
    console.log(scriptHelp(usage));
    process.exit(0);
  }
  return Object.fromEntries(Object.entries(values).filter((e): e is [string, string | boolean] => e[1] !== undefined));
}

/** `npm run <name> -- --help`. */
export function scriptHelp({ name, does, options = {}, environment = {} }: ScriptUsage): string {
  const rows = (entries: [string, string][], width: number) => entries.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`);
  const flags = Object.entries(options).map(([k, v]): [string, string] => [`--${k}`, v]);
  const width = Math.max(0, ...[...flags, ...Object.entries(environment)].map(([k]) => k.length));
  return [
    `usage: npm run ${name}${flags.length > 0 ? ' [-- options]' : ''}`,
    '',
    `  ${does}`,
    ...(flags.length > 0 ? ['', 'options:', ...rows(flags, width)] : []),
    ...(Object.keys(environment).length > 0 ? ['', 'environment:', ...rows(Object.entries(environment), width)] : []),
  ].join('\n');
}
