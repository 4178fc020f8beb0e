/**
 * The configuration a worker runs with now: activities read it at call time, so a reload (SIGHUP, a change to
 * the file, or `set` in tests) changes what "the preset registered now" means without a restart. A run keeps the
 * composition it resolved at its start.
 */
import type { DeputyConfig } from './schema.js';

/** Holds the current configuration. */
export class ConfigStore {
  #current: DeputyConfig;
  #listeners = new Set<(config: DeputyConfig) => void>();

  constructor(config: DeputyConfig) {
    this.#current = config;
  }

  /** The configuration in force now. */
  get current(): DeputyConfig {
    return this.#current;
  }

  /** Replaces the configuration (already validated); later activity calls see it. */
  set(config: DeputyConfig): void {
    this.#current = config;
    for (const listener of this.#listeners) listener(config);
  }

  /** Calls `listener` after every `set`. */
  onChange(listener: (config: DeputyConfig) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
