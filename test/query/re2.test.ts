import { describe, expect, it } from "vitest";
import { compileRegexp } from "../../src/jobs/regexp.ts";
import { compileGoRegexp, GoRegexpError, MAX_PATTERN_LENGTH } from "../../src/query/filter/go-regexp.ts";
import { compileFilter, FilterError } from "../../src/query/filter/index.ts";

const a50 = "a".repeat(50);
const x50 = "x".repeat(50);

/**
 * Patterns that take a backtracking engine (V8's RegExp) exponential time on
 * these 50-character inputs: 2^50 steps would never finish. RE2 is linear, so
 * each case simply completes; the answers are Go's.
 */
const pathological: readonly (readonly [pattern: string, text: string, want: boolean])[] = [
  ["^(a+)+$", `${a50}!`, false],
  ["^(a+)+$", a50, true],
  ["(a|aa)+$", `${a50}!`, false],
  ["^(a|aa)+$", a50, true],
  ["(x+x+)+y", x50, false],
  ["(x+x+)+y", `${x50}y`, true],
  ["(a*)*b", a50, false],
  ["(a*)*b", `${a50}b`, true],
  ["^(a|a?)+$", `${a50}!`, false],
  ["^(\\w+\\s?)*$", `${"ab ".repeat(16)}ab!`, false],
  ["^(([a-z])+.)+[A-Z]([a-z])+$", `${a50}!`, false],
  ["(.*a){12}", a50, true],
  ["^(a?){50}a{50}$", a50, true],
];

describe("Go regular expressions run in linear time", () => {
  it.each(pathological)("filter: ID matches %j on %j", (pattern, text, want) => {
    const f = compileFilter(`ID matches \`${pattern}\``);
    expect(f.matches({ ID: text })).toBe(want);
    expect(compileFilter(`ID not matches \`${pattern}\``).matches({ ID: text })).toBe(!want);
  });

  it.each(pathological)("constraint: %j on %j", (pattern, text, want) => {
    expect(compileRegexp(pattern).test(text)).toBe(want);
  });

  it("scans a long value once, even when it almost matches everywhere", () => {
    const long = `${"a".repeat(100_000)}!`;
    expect(compileFilter('ID matches "^(a+)+$"').matches({ ID: long })).toBe(false);
    expect(compileRegexp("(a|aa)+$").test(long)).toBe(false);
  });
});

describe("Go's regexp.MatchString semantics", () => {
  it.each([
    ["web", "my-web-1", true], // unanchored search
    ["^web", "my-web-1", false],
    ["", "anything", true],
    ["a(?i)b", "aB", true], // flags scope to the rest of the group
    ["a(?i)b", "AB", false],
    ["(?i:a)b", "AB", false],
    ["(?<name>x)", "x", true],
    ["a{,3}", "a{,3}", true], // not a repeat in Go: literal text
    ["[[:^alpha:]]", "abc", false],
    ["^\\s$", "\u000b", false], // Go's \s has no \v
    ["\\d", "\u0661", false], // nor is \d Unicode
    ["^.$", "\u{1F600}", true], // one code point, not two UTF-16 units
  ] as const)("%j on %j", (pattern, text, want) => {
    expect(compileGoRegexp(pattern).test(text)).toBe(want);
  });
});

describe("patterns Go refuses", () => {
  it.each([
    ["(abc", "error parsing regexp: missing closing ): `(abc`"],
    ["[z-a]", "error parsing regexp: invalid character class range: `z-a`"],
    ["\\1", "error parsing regexp: invalid escape sequence: `\\1`"],
    ["(?=x)", "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"],
    ["(?<=x)y", "error parsing regexp: invalid named capture: `(?<=x)y`"],
    ["a**", "error parsing regexp: invalid nested repetition operator: `**`"],
    ["x{1001}", "error parsing regexp: invalid repeat count: `{1001}`"],
    [`${"(".repeat(1_500)}${")".repeat(1_500)}`, "error parsing regexp: expression nests too deeply"],
  ])("%j", (pattern, reason) => {
    let caught: unknown;
    try {
      compileGoRegexp(pattern);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(GoRegexpError);
    expect((caught as GoRegexpError).reason).toBe(reason);
  });

  it("a filter reports the pattern, Go's reason and where the value is", () => {
    try {
      compileFilter("JobID matches `(web`");
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(FilterError);
      const e = err as FilterError;
      expect(e.kind).toBe("regexp");
      expect(e.detail).toBe(
        'Failed to compile regular expression "(web": error parsing regexp: missing closing ): `(web`',
      );
      expect(e.position).toEqual({ offset: 14, line: 1, column: 15 });
    }
  });

  it("a constraint's error names the pattern even when Go's quotes only a fragment", () => {
    expect(() => compileRegexp("^web-[z-a]$")).toThrowError(
      'error parsing regexp: invalid character class range: `z-a` (in regular expression "^web-[z-a]$")',
    );
  });
});

describe("pattern length", () => {
  it("refuses a pattern longer than the cap with an error naming it, before compiling", () => {
    expect(() => compileGoRegexp("a".repeat(MAX_PATTERN_LENGTH))).not.toThrow();
    expect(() => compileGoRegexp("a".repeat(MAX_PATTERN_LENGTH + 1))).toThrow(
      new RegExp(`pattern is ${MAX_PATTERN_LENGTH + 1} characters, more than ${MAX_PATTERN_LENGTH}`),
    );
  });
});
