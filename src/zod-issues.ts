import type { z } from 'zod';

/** Formats zod issues as one line each, naming the field path (`limits.maxTurns: Too small: expected number to be >0`). */
export function describeIssues(error: z.ZodError, root = ''): string[] {
  return error.issues.map((issue) => {
    const path = [root, ...issue.path.map(String)].filter((p) => p !== '').join('.');
    return `${path || '(root)'}: ${issue.message}`;
  });
}
