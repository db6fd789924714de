import { HclTextScanner } from "../../jobs/hcl/hcl-text-scanner.ts";
import { equalFold } from "./hcl1-ast.ts";

/**
 * hcl2json cannot render blocks of one type with and without labels side by
 * side (`path {}` next to `path "a" {}`), where Nomad reads the unlabeled one
 * as a block with an empty name and refuses it ("Invalid missing variable
 * path in namespace dev", one of Nomad's own test cases). This gives the
 * text back with `""` written after each unlabeled `namespace`, `node_pool`,
 * `host_volume` and `variables { path }` header, so that a second parse
 * reaches the same validation error; undefined when there is none.
 *
 * The scan skips strings (templates included), heredocs, comments and
 * attribute expressions, and only looks at block headers.
 */
export function withEmptyLabels(text: string): string | undefined {
  const inserts: number[] = [];
  const s = new HclTextScanner(text);

  const wanted = (path: readonly string[], name: string): boolean => {
    if (path.length === 0) return ["namespace", "node_pool", "host_volume"].some((t) => equalFold(t, name));
    return (
      path.length === 2 &&
      equalFold(path[0]!, "namespace") &&
      equalFold(path[1]!, "variables") &&
      equalFold(name, "path")
    );
  };

  function body(path: readonly string[]): void {
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
      const afterName = s.i;
      s.skipSpace(false);
      if (s.peek() === "=" || s.peek() === ":") {
        s.i++;
        s.skipExpr();
        continue;
      }
      let labels = 0;
      while (s.atLabel()) {
        if (s.peek() === '"') {
          s.i++;
          s.skipString();
        } else s.ident();
        labels++;
        s.skipSpace(false);
      }
      if (s.peek() !== "{") {
        s.skipExpr();
        continue;
      }
      s.i++;
      if (labels === 0 && wanted(path, name)) inserts.push(afterName);
      body([...path, name]);
    }
  }

  body([]);
  if (inserts.length === 0) return undefined;
  let out = text;
  for (const at of inserts.reverse()) out = `${out.slice(0, at)} ""${out.slice(at)}`;
  return out;
}
