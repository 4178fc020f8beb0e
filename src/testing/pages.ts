/**
 * A tool that returns a fixed 2 KB page, marked with its page number: long runs in tests and benchmarks use it to
 * grow a session by a known amount per turn.
 */
import { z } from 'zod';
import { defineTool } from '../contract/tools.js';

/** Size of every page, in characters. */
const PAGE_CHARS = 2048;

/** The text of page `page`: a marker (`PAGE-<n>-MARK`) then filler, exactly `PAGE_CHARS` long. */
export function pageText(page: number): string {
  return `PAGE-${page}-MARK ${'lorem ipsum dolor sit amet '.repeat(80)}`.slice(0, PAGE_CHARS);
}

/** `fetch_page`: one page per call; scope `tools.notes`. */
export const fetchPageTool = defineTool({
  name: 'fetch_page',
  description: 'Fetch one page.',
  parameters: z.strictObject({ page: z.number().int() }),
  scopes: ['tools.notes'],
  async execute({ page }) {
    return pageText(page);
  },
});
