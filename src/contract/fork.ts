/**
 * The rule of a fork, which no JSON Schema states: a fork runs with exactly its source's composition, whoever starts
 * it (the client or plain JSON). Zod-free, so workflow code checks it too; `RunInput` in run.ts refines with it.
 */

/** One broken part of the rule: the field, and what to do instead. */
export interface ForkProblem {
  path: string[];
  message: string;
}

/** What a fork's input breaks of the rule; empty for anything that is not a fork. */
export function forkProblems(input: {
  preset?: unknown;
  restore?: { kind?: unknown; select?: unknown; preset?: unknown } | undefined;
}): ForkProblem[] {
  if (input.restore?.kind !== 'fork') return [];
  const problems: ForkProblem[] = [];
  if (input.preset !== undefined) {
    problems.push({
      path: ['preset'],
      message: "a fork keeps its source's composition; start a new run (or import the session) to choose a preset",
    });
  }
  if (input.restore.select !== undefined) {
    problems.push({ path: ['restore', 'select'], message: 'a fork does not select a preset' });
  }
  if (input.restore.preset === undefined) {
    problems.push({
      path: ['restore', 'preset'],
      message: "a fork needs its source's preset definition (DeputyClient.fork sends it)",
    });
  }
  return problems;
}
