/**
 * Output with one block kept current: on a terminal a block drawn last is redrawn in place (the cursor moved up over
 * it and the rest of the screen cleared) while nothing else was printed after it; lines printed meanwhile go above
 * the next drawing. Off a terminal every drawing is printed whole.
 */
export class LiveBlock {
  /** Lines of the block drawn last, when it is still the last thing on the screen. */
  #drawn = 0;

  constructor(private readonly out: NodeJS.WriteStream) {}

  /** A line of its own, below whatever was there. */
  print(line: string): void {
    this.#drawn = 0;
    this.out.write(`${line}\n`);
  }

  /** `text` as the block: over the last drawing when nothing came after it, else below. */
  draw(text: string): void {
    const lines = text.split('\n');
    if (!this.out.isTTY) {
      this.out.write(`\n${text}\n\n`);
      return;
    }
    const over = this.#drawn > 0 ? `\x1b[${this.#drawn}F\x1b[J` : '\n';
    this.out.write(`${over}${text}\n`);
    this.#drawn = lines.length;
  }
}
