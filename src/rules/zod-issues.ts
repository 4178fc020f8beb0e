import type { z } from 'zod';
import { formatPath } from '../contract/checks/schema-wording.js';

export { formatPath };

/** Formats zod issues as one line each, naming the field path (`limits.maxTurns: Too small: expected number to be >0`). */
export function describeIssues(error: z.ZodError, root = ''): string[] {
  return error.issues.map((issue) => `${formatPath(issue.path, root)}: ${issue.message}`);
}
