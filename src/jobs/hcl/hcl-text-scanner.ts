/**
 * A hand-written scanner over HCL text, for the places where hcl2json's
 * output has lost something only the source still shows (the order of
 * labeled blocks, blocks written without labels). It does not parse HCL: it
 * moves a position `i` past whitespace, comments, strings (templates
 * included), heredocs and attribute expressions, so that callers only stop
 * at block headers. Malformed text never throws; the scan just ends at the
 * end of the text.
 */
export class HclTextScanner {
  /** The position of the next unread character. */
  i = 0;
  readonly n: number;

  constructor(readonly text: string) {
    this.n = text.length;
  }

  /** Past blanks and comments; past newlines too when `newlines`. */
  skipSpace(newlines: boolean): void {
    const { text, n } = this;
    for (;;) {
      const c = text[this.i];
      if (c === " " || c === "\t" || c === "\r" || (newlines && c === "\n")) this.i++;
      else if (c === "#" || (c === "/" && text[this.i + 1] === "/")) {
        while (this.i < n && text[this.i] !== "\n") this.i++;
      } else if (c === "/" && text[this.i + 1] === "*") {
        const end = text.indexOf("*/", this.i + 2);
        this.i = end < 0 ? n : end + 2;
      } else return;
    }
  }

  /** From after an opening quote to after the closing one; `${...}` inside may hold strings. */
  skipString(): void {
    const { text, n } = this;
    while (this.i < n && text[this.i] !== '"' && text[this.i] !== "\n") {
      if (text[this.i] === "\\") this.i += 2;
      else if ((text[this.i] === "$" || text[this.i] === "%") && text[this.i + 1] === "{") {
        this.i += 2;
        this.skipExpr(true);
        this.i++;
      } else this.i++;
    }
    this.i++;
  }

  /** From `<<` to the end of the heredoc's closing marker line (its newline unread). */
  skipHeredoc(): void {
    const { text, n } = this;
    const m = /^<<-?([A-Za-z_][A-Za-z0-9_-]*)[^\n]*\n/.exec(text.slice(this.i, this.i + 200));
    if (!m) {
      this.i += 2;
      return;
    }
    this.i += m[0].length;
    const marker = m[1]!;
    while (this.i < n) {
      const eol = text.indexOf("\n", this.i);
      const line = text.slice(this.i, eol < 0 ? n : eol);
      if (line.trim() === marker) {
        // The newline after the marker ends the attribute: left for skipExpr.
        this.i = eol < 0 ? n : eol;
        return;
      }
      this.i = eol < 0 ? n : eol + 1;
    }
  }

  /**
   * Skips an expression: to the newline ending it, or the `}` closing the
   * enclosing block (left unread); with `interp`, to the `}` closing a `${`.
   */
  skipExpr(interp = false): void {
    const { text, n } = this;
    let depth = 0;
    while (this.i < n) {
      const c = text[this.i]!;
      if (c === '"') {
        this.i++;
        this.skipString();
      } else if (c === "<" && text[this.i + 1] === "<") this.skipHeredoc();
      else if (c === "#" || (c === "/" && (text[this.i + 1] === "/" || text[this.i + 1] === "*"))) {
        if (c === "/" && text[this.i + 1] === "*") this.skipSpace(false);
        else if (depth === 0 && !interp) return;
        else this.skipSpace(false);
      } else if (c === "(" || c === "[" || c === "{") {
        depth++;
        this.i++;
      } else if (c === ")" || c === "]" || c === "}") {
        if (depth === 0) return;
        depth--;
        this.i++;
      } else if (c === "\n" && depth === 0 && !interp) return;
      else this.i++;
    }
  }

  /** Reads an identifier at the position, or leaves it and gives undefined. */
  ident(): string | undefined {
    const m = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(this.text.slice(this.i, this.i + 256));
    if (!m) return undefined;
    this.i += m[0].length;
    return m[0];
  }

  /** The character `offset` past the position, or undefined past the end. */
  peek(offset = 0): string | undefined {
    return this.text[this.i + offset];
  }

  /** Whether a block label (a string or a bare identifier) starts at the position. */
  atLabel(): boolean {
    const c = this.text[this.i];
    return c === '"' || /[A-Za-z_]/.test(c ?? "");
  }

  get done(): boolean {
    return this.i >= this.n;
  }
}
