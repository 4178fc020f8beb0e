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

  constructor(
    problems: readonly string[],
    /** Where the problems are: `environment`, a config file's path … */
    readonly source: string,
  ) {
    super(`invalid configuration (${source}):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }

  /** Every problem `attempts` found, as one error (a person fixes them in one round), or none. */
  static gathered(errors: readonly ConfigError[]): ConfigError | undefined {
    if (errors.length === 0) return undefined;
    const sources = [...new Set(errors.map((e) => e.source))];
    return new ConfigError(
      errors.flatMap((e) => e.problems),
      sources.join(' and '),
    );
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
    /** Where a server may be had, when the caller knows one (a checkout has `npm run ui`). */
    hint?: string,
  ) {
    super(
      `no Temporal server answers at ${address} (${reasonOf(cause)}): start one there, or set TEMPORAL_ADDRESS to ` +
        `one that runs${hint ? ` (${hint})` : ''}`,
      { cause },
    );
  }
}

function reasonOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0]!.replace(/\.$/, '');
}

/** Thrown when a payload cannot be decrypted: the key is missing, or it is not the key it was encrypted with. */
export class CodecError extends DeputyError {}

/** Thrown when a payload labelled compressed does not inflate. */
export class CompressionError extends DeputyError {}

/** Thrown when an artifact cannot be read back: gone from the store, or not what was saved. */
export class ArtifactError extends DeputyError {}

/** Thrown when a stored payload cannot be read back: gone, or not what was stored. */
export class PayloadStoreError extends DeputyError {}

/**
 * Thrown by a tool for a failure the model should see and answer (a refused request, an error result), not retry:
 * the model receives the message as a tool error.
 */
export class ToolError extends Error {
  override readonly name = 'ToolError';
}

/** A mistake in how the command was called: one line on stderr, exit status 2. */
export class UsageError extends DeputyError {}

/** Another demo or `npm run ui` holds the state directory. */
export class StateInUseError extends DeputyError {}

/** Thrown when a run refuses an update (a validator or the handler said no); the message says why. */
export class UpdateRejectedError extends DeputyError {}

/** Thrown when a run names a preset or model the config does not know. */
export class CompositionError extends DeputyError {
  constructor(
    message: string,
    /** Dotted failure type for the activity boundary. */
    readonly type: string,
  ) {
    super(message);
  }
}
