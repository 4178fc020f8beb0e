/** Scopes the contract names, in a module without zod, so workflow code can read them. */

/** Scope a run must hold to be offered `delegate` (and the other steering tools of a parent). */
export const DELEGATE_SCOPE = 'run.delegate';
