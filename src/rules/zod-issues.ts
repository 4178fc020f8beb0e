import type { z } from 'zod';

const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;

/** A field path as people read it: `limits.maxTurns`, `presets.0.id`, `prices["gpt 4"].inputPerMTokUsd`. */
export function formatPath(path: readonly PropertyKey[], root = ''): string {
  let text = root;
  for (const key of path) {
    const name = typeof key === 'symbol' ? key.toString() : String(key);
    if (PLAIN_KEY.test(name)) text += text === '' ? name : `.${name}`;
    else text += `[${JSON.stringify(name)}]`;
  }
  return text || '(root)';
}

/** Formats zod issues as one line each, naming the field path (`limits.maxTurns: Too small: expected number to be >0`). */
export function describeIssues(error: z.ZodError, root = ''): string[] {
  return error.issues.map((issue) => `${formatPath(issue.path, root)}: ${issue.message}`);
}
