/** Scopes the contract names, in a module without zod, so workflow code can read them. */

/** Scope a run must hold to be offered `delegate` (and the other steering tools of a parent). */
export const DELEGATE_SCOPE = 'run.delegate';

/** True when `held` contains every scope in `needed`. */
export function holdsScopes(held: readonly string[], needed: readonly string[]): boolean {
  return needed.every((scope) => held.includes(scope));
}
