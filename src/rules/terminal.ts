/**
 * Text that came from runs (a model's answer, a child's question, a tool's output), made safe to print on a terminal.
 * Must stay importable from workflow code: pure.
 */

// C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` with every control character shown as a visible escape (`\u{1b}`), so no output can move the cursor, clear
 * the screen, write the clipboard (OSC 52) or reorder what a person reads; tabs and newlines stay.
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/** `value` as indented JSON that is safe on a terminal and still valid JSON (unsafe characters as `\uXXXX` escapes). */
export function terminalSafeJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
