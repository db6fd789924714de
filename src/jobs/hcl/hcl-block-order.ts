/**
 * The source order of labeled blocks. hcl2json renders the blocks of one
 * type as an object keyed by their labels, and Go's JSON encoder sorts those
 * keys, so `group "web"` written before `group "api"` comes out second; in
 * Nomad the order of groups, tasks, ports and devices is the order written.
 * This scans the HCL text for block headers (skipping strings, heredocs,
 * comments and attribute expressions) and numbers every labeled block by
 * where it starts, keyed by its path: the types and labels of the blocks
 * enclosing it, an unlabeled block counted among its siblings of the same
 * type (`network#1`).
 */

export type BlockPath = readonly string[];

export const pathKey = (path: BlockPath) => path.join("\u0000");

export function blockOrder(text: string): ReadonlyMap<string, number> {
  const order = new Map<string, number>();
  let i = 0;
  const n = text.length;

  const skipSpace = (newlines: boolean) => {
    for (;;) {
      const c = text[i];
      if (c === " " || c === "\t" || c === "\r" || (newlines && c === "\n")) i++;
      else if (c === "#" || (c === "/" && text[i + 1] === "/")) {
        while (i < n && text[i] !== "\n") i++;
      } else if (c === "/" && text[i + 1] === "*") {
        const end = text.indexOf("*/", i + 2);
        i = end < 0 ? n : end + 2;
      } else return;
    }
  };

  /** From after an opening quote to after the closing one; `${...}` inside may hold strings. */
  const skipString = () => {
    while (i < n && text[i] !== '"' && text[i] !== "\n") {
      if (text[i] === "\\") i += 2;
      else if ((text[i] === "$" || text[i] === "%") && text[i + 1] === "{") {
        i += 2;
        skipExpr(true);
        i++;
      } else i++;
    }
    i++;
  };

  const skipHeredoc = () => {
    const m = /^<<-?([A-Za-z_][A-Za-z0-9_-]*)[^\n]*\n/.exec(text.slice(i, i + 200));
    if (!m) {
      i += 2;
      return;
    }
    i += m[0].length;
    const marker = m[1]!;
    while (i < n) {
      const eol = text.indexOf("\n", i);
      const line = text.slice(i, eol < 0 ? n : eol);
      if (line.trim() === marker) {
        // The newline after the marker ends the attribute: left for skipExpr.
        i = eol < 0 ? n : eol;
        return;
      }
      i = eol < 0 ? n : eol + 1;
    }
  };

  /**
   * Skips an expression: to the newline ending it, or the `}` closing the
   * enclosing block (left unread); with `interp`, to the `}` closing a `${`.
   */
  function skipExpr(interp = false): void {
    let depth = 0;
    while (i < n) {
      const c = text[i]!;
      if (c === '"') {
        i++;
        skipString();
      } else if (c === "<" && text[i + 1] === "<") skipHeredoc();
      else if (c === "#" || (c === "/" && (text[i + 1] === "/" || text[i + 1] === "*"))) {
        if (c === "/" && text[i + 1] === "*") skipSpace(false);
        else if (depth === 0 && !interp) return;
        else skipSpace(false);
      } else if (c === "(" || c === "[" || c === "{") {
        depth++;
        i++;
      } else if (c === ")" || c === "]" || c === "}") {
        if (depth === 0) return;
        depth--;
        i++;
      } else if (c === "\n" && depth === 0 && !interp) return;
      else i++;
    }
  }

  const ident = (): string | undefined => {
    const m = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(text.slice(i, i + 256));
    if (!m) return undefined;
    i += m[0].length;
    return m[0];
  };

  const label = (): string | undefined => {
    if (text[i] === '"') {
      const start = i;
      i++;
      skipString();
      try {
        return JSON.parse(text.slice(start, i)) as string;
      } catch {
        return text.slice(start + 1, i - 1);
      }
    }
    return ident();
  };

  function body(path: BlockPath): void {
    const counts = new Map<string, number>();
    while (i < n) {
      skipSpace(true);
      if (i >= n) return;
      if (text[i] === "}") {
        i++;
        return;
      }
      const start = i;
      const name = ident();
      if (!name) {
        skipExpr();
        if (i === start) i++;
        continue;
      }
      skipSpace(false);
      if (text[i] === "=" || text[i] === ":") {
        i++;
        skipExpr();
        continue;
      }
      const labels: string[] = [];
      for (;;) {
        if (text[i] !== '"' && !/[A-Za-z_]/.test(text[i] ?? "")) break;
        const l = label();
        if (l === undefined) break;
        labels.push(l);
        skipSpace(false);
      }
      if (text[i] !== "{") {
        skipExpr();
        continue;
      }
      i++;
      let child: BlockPath;
      if (labels.length > 0) {
        child = [...path, name, ...labels];
        const key = pathKey(child);
        if (!order.has(key)) order.set(key, start);
      } else {
        const k = counts.get(name) ?? 0;
        counts.set(name, k + 1);
        child = [...path, `${name}#${k}`];
      }
      body(child);
    }
  }

  body([]);
  return order;
}
