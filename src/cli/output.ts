/** Where the CLI writes: stdout for what was asked, stderr for what it says about it. */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { terminalSafe } from '../rules/terminal.js';

/** Prints a line whose text may come from runs: control characters are shown, never obeyed. */
export function print(text: string): void {
  console.log(terminalSafe(text));
}

/** A line about the output rather than of it, on stderr: stdout stays what a script reads. */
export function warn(text: string): void {
  console.error(terminalSafe(text.startsWith('deputy') ? text : `deputy: ${text}`));
}

/** `text` on stdout, or into `file` whole: written beside it and renamed, so a failure leaves no partial file. */
export function output(text: string, file: string | undefined): void {
  if (file === undefined) {
    console.log(text);
    return;
  }
  const partial = `${file}.partial-${process.pid}`;
  try {
    writeFileSync(partial, `${text}\n`);
    renameSync(partial, file);
  } finally {
    rmSync(partial, { force: true });
  }
  console.error(`deputy: wrote ${file}`);
}
