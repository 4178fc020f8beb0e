/** Base class of every error Deputy throws on purpose; sets `name` to the concrete class name. */
export class DeputyError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Thrown when the configuration file or the environment is invalid; the user must fix something before starting. */
export class ConfigError extends DeputyError {
  /** One readable line per problem, each naming the field at fault. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[], source: string) {
    super(`invalid configuration (${source}):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

/** Thrown when input from a caller (run input, update payload, imported session) fails its schema. */
export class InputError extends DeputyError {
  /** One readable line per problem, each naming the field at fault. */
  readonly problems: readonly string[];

  constructor(what: string, problems: readonly string[]) {
    super(`invalid ${what}: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

/** Thrown when the Temporal CLI (which carries the dev server) cannot be found on this machine. */
export class TemporalCliNotFoundError extends DeputyError {}

/** Thrown when no Temporal server answers at the address Deputy was given; its message names the address. */
export class TemporalUnreachableError extends DeputyError {
  constructor(
    readonly address: string,
    cause: unknown,
  ) {
    super(
      `no Temporal server answers at ${address} (${reasonOf(cause)}): start one there, or set TEMPORAL_ADDRESS to ` +
        `one that runs (npm run ui keeps the demos' server up at the address it prints)`,
      { cause },
    );
  }
}

function reasonOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0]!.replace(/\.$/, '');
}
