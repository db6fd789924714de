import { HclTextScanner } from "./hcl-text-scanner.ts";

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
  const s = new HclTextScanner(text);

  const label = (): string | undefined => {
    if (s.peek() === '"') {
      const start = s.i;
      s.i++;
      s.skipString();
      try {
        return JSON.parse(text.slice(start, s.i)) as string;
      } catch {
        return text.slice(start + 1, s.i - 1);
      }
    }
    return s.ident();
  };

  function body(path: BlockPath): void {
    const counts = new Map<string, number>();
    while (!s.done) {
      s.skipSpace(true);
      if (s.done) return;
      if (s.peek() === "}") {
        s.i++;
        return;
      }
      const start = s.i;
      const name = s.ident();
      if (!name) {
        s.skipExpr();
        if (s.i === start) s.i++;
        continue;
      }
      s.skipSpace(false);
      if (s.peek() === "=" || s.peek() === ":") {
        s.i++;
        s.skipExpr();
        continue;
      }
      const labels: string[] = [];
      while (s.atLabel()) {
        const l = label();
        if (l === undefined) break;
        labels.push(l);
        s.skipSpace(false);
      }
      if (s.peek() !== "{") {
        s.skipExpr();
        continue;
      }
      s.i++;
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
