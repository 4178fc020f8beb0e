/**
 * How the CLI draws on the terminal it writes to: its width, and colour by status when stdout is a terminal and
 * `NO_COLOR` is unset (Node's own `util.styleText`). A pipe or a log gets plain text 80 columns wide.
 */
import { styleText } from 'node:util';
import type { TreeStyle } from '../client/tree.js';
import { terminalSafe } from '../rules/terminal.js';

/**
 * `value` with every string in it made safe to print (what runs wrote may hold control characters): done before
 * colour is added, so the colours are the only escapes printed.
 */
export function safeStrings<T>(value: T): T {
  return JSON.parse(JSON.stringify(value), (_k, v: unknown) => (typeof v === 'string' ? terminalSafe(v) : v)) as T;
}

type Colour = Parameters<typeof styleText>[0];

/** The colour of each status a person should notice. */
function colourOf(status: string): Colour | undefined {
  if (status === 'completed') return 'green';
  if (/failed|cancelled|terminated|timed_out|refused/.test(status)) return 'red';
  if (status.startsWith('waiting') || status === 'limit_reached') return 'yellow';
  if (status === 'running' || status === 'starting') return 'cyan';
  return undefined;
}

/** Whether stdout takes colour: a terminal, and nobody asked for none. */
export function colourful(stream: NodeJS.WriteStream = process.stdout): boolean {
  return stream.isTTY === true && (process.env.NO_COLOR ?? '') === '' && process.env.TERM !== 'dumb';
}

/** The tree style for stdout: its width (80 off a terminal), coloured on a terminal. */
export function terminalStyle(stream: NodeJS.WriteStream = process.stdout): Required<TreeStyle> {
  const width = stream.isTTY ? Math.max(60, stream.columns || 80) : 80;
  const colour = colourful(stream);
  return {
    width,
    paint: (status, text) => {
      const chosen = colour ? colourOf(status) : undefined;
      return chosen ? styleText(chosen, text) : text;
    },
  };
}

/** A table with a header, columns padded to their widest cell (the last left as it is). */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
