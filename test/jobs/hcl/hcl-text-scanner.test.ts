import { describe, expect, it } from "vitest";
import { HclTextScanner } from "../../../src/jobs/hcl/hcl-text-scanner.ts";

/** The rest of the text once `step` has run from `from`. */
const restAfter = (text: string, step: (s: HclTextScanner) => void, from = 0): string => {
  const s = new HclTextScanner(text);
  s.i = from;
  step(s);
  return text.slice(s.i);
};

describe("HclTextScanner", () => {
  it("skips blanks and every comment style, newlines only when asked", () => {
    expect(restAfter(" \t# c\nx", (s) => s.skipSpace(false))).toBe("\nx");
    expect(restAfter(" // c\n /* a\nb */ x", (s) => s.skipSpace(true))).toBe("x");
    expect(restAfter("/* never closed", (s) => s.skipSpace(true))).toBe("");
  });

  it("skips a string with escapes and templates holding strings and braces", () => {
    expect(restAfter('"a\\"b" rest', (s) => s.skipString(), 1)).toBe(" rest");
    // Built by concatenation: this is HCL template text, not a JS template.
    const templated = '"$' + '{lookup({a = "}"}, "a")} %{ if x }y%{ endif }" rest';
    expect(restAfter(templated, (s) => s.skipString(), 1)).toBe(" rest");
    // An unterminated string stops at the end of its line.
    expect(restAfter('"abc\nnext', (s) => s.skipString(), 1)).toBe("next");
  });

  it("skips a heredoc to its marker line, leaving the newline", () => {
    expect(restAfter('<<EOF\n} "x" {\n  EOF\nrest', (s) => s.skipHeredoc())).toBe("\nrest");
    expect(restAfter("<<-EOT x\nEOT", (s) => s.skipHeredoc())).toBe("");
    expect(restAfter("<< not a heredoc", (s) => s.skipHeredoc())).toBe(" not a heredoc");
  });

  it("skips an attribute expression to its newline or the closing brace", () => {
    expect(restAfter('[1, {a = "}"},\n 2] # c\nnext', (s) => s.skipExpr())).toBe("# c\nnext");
    expect(restAfter("f(x) /* a\nb */ + 1\nnext", (s) => s.skipExpr())).toBe("\nnext");
    expect(restAfter("1 }\nnext", (s) => s.skipExpr())).toBe("}\nnext");
    expect(restAfter("<<EOF\n}\nEOF\nnext", (s) => s.skipExpr())).toBe("\nnext");
  });

  it("skips an interpolation to its closing brace across newlines", () => {
    expect(restAfter('a +\n # c\n "}" }tail', (s) => s.skipExpr(true))).toBe("}tail");
  });

  it("reads identifiers and recognises label starts", () => {
    const s = new HclTextScanner('node_pool-x "a" {');
    expect(s.ident()).toBe("node_pool-x");
    expect(s.atLabel()).toBe(false);
    s.skipSpace(false);
    expect(s.atLabel()).toBe(true);
    expect(s.ident()).toBeUndefined();
    expect(s.peek()).toBe('"');
    expect(s.peek(4)).toBe("{");
    expect(s.done).toBe(false);
    s.i = s.n;
    expect(s.done).toBe(true);
    expect(s.peek()).toBeUndefined();
  });
});
