/**
 * The checks ajv compiled from src/contract/json-schemas.ts (`npm run schemas`): each checks a value and shapes it
 * as zod's parse would, in place (defaults filled in, the keys zod drops removed). True when the value passes.
 */
/** A run input that carries neither `resume` nor `restore`. */
export declare function plainRunInput(value: unknown): boolean;
/** A `delegate` call's arguments. */
export declare function delegateArgs(value: unknown): boolean;
