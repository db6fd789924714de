import { describe, expect, it } from "vitest";
import type { FilterErrorKind } from "../../src/query/filter/index.ts";
import { compileFilter, FilterError } from "../../src/query/filter/index.ts";
import { allocation, evaluation, node } from "./nomad-objects.ts";

const rows = { eval: evaluation, node, alloc: allocation } as const;
type On = keyof typeof rows;

type Case =
  | { readonly on: On; readonly expr: string; readonly want: boolean }
  | { readonly on: On; readonly expr: string; readonly error: RegExp; readonly kind: FilterErrorKind };

const match = (on: On, expr: string, want: boolean): Case => ({ on, expr, want });
const fails = (on: On, expr: string, error: RegExp, kind: FilterErrorKind = "evaluation"): Case => ({
  on,
  expr,
  error,
  kind,
});

const cases: Case[] = [
  // -- equality and value spellings --
  match("eval", 'Status == "blocked"', true),
  match("eval", "Status == blocked", true),
  match("eval", "Status == `blocked`", true),
  match("eval", 'Status != "blocked"', false),
  match("eval", 'Status == "pending"', false),
  match("eval", "Status==blocked", true),
  match("eval", 'TriggeredBy == "job-register"', true),
  match("eval", 'NodeID == ""', true),
  match("eval", 'PreviousEval == "0f98f7ea-26d3-4c36-4a5b-05e8a1ea4d2e"', true),

  // -- coercion to the field's kind --
  match("eval", "Priority == 50", true),
  match("eval", 'Priority == "50"', true),
  match("eval", 'Priority == "0x32"', true),
  match("eval", "Priority == `0o62`", true),
  match("eval", "Priority != 70", true),
  match("eval", "CreateIndex == 54 and ModifyIndex == 55", true),
  fails(
    "eval",
    "Priority == high",
    /error getting match value in expression: strconv\.ParseInt: parsing "high": invalid syntax/,
  ),
  match("eval", "EscapedComputedClass == false", true),
  match("eval", "EscapedComputedClass == F", true),
  match("eval", "AnnotatePlan != true", true),
  fails("eval", "AnnotatePlan == yes", /strconv\.ParseBool: parsing "yes": invalid syntax/),
  match("alloc", "Metrics.ScoreMetaData.0.NormScore == 0.8734", true),
  match("alloc", "Metrics.ScoreMetaData.0.NormScore == 1", false),
  fails(
    "alloc",
    "Metrics.ScoreMetaData.0.NormScore == abc",
    /strconv\.ParseFloat: parsing "abc": invalid syntax/,
  ),
  match("node", 'Attributes["cpu.numcores"] == 8', true),

  // -- and / or / not precedence: not > and > or --
  match("eval", 'TriggeredBy == "job-register" and Namespace == "default"', true),
  match("eval", 'TriggeredBy == "node-update" or Status == "blocked"', true),
  match("eval", 'Status == "pending" and JobID == "example" or Priority == 50', true),
  match("eval", 'Status == "pending" and (JobID == "example" or Priority == 50)', false),
  match("eval", 'Status == "pending" or not Priority == 50 and JobID == "example"', false),
  match("eval", 'not Status == "pending"', true),
  match("eval", 'not (Status == "blocked" or Status == "pending")', false),
  match("eval", 'not not Status == "blocked"', true),
  match("eval", '(Status == "blocked" or Status == "pending") and JobID contains "amp"', true),
  match("eval", "((Priority == 50))", true),

  // -- regular expressions (Go RE2) --
  match("eval", 'JobID matches "^ex"', true),
  match("eval", 'JobID matches "^EX"', false),
  match("eval", 'JobID matches "(?i)^EX"', true),
  match("eval", "StatusDescription matches `placement\\s+conflicts$`", true),
  match("eval", 'JobID not matches "^web"', true),
  match("node", "Name matches `^nomad-client-[[:digit:]]+$`", true),
  match("node", 'Meta["connect.sidecar_image"] matches `^envoyproxy/envoy:v1\\.2\\d$`', true),
  match("node", 'Drivers.docker.Attributes["driver.docker.version"] matches `^23\\.`', true),
  fails("eval", 'Priority matches "5"', /Value of type int is not convertible to \[\]byte/),
  // Go scopes flags: (?i) covers only what follows it.
  match("node", 'Name matches "nomad(?i)-CLIENT"', true),
  match("node", 'Name matches "NOMAD(?i)-client"', false),
  fails("node", 'Name matches "(?=client)"', /invalid or unsupported Perl syntax/, "regexp"),
  fails("node", "Name matches `\\1`", /invalid escape sequence/, "regexp"),
  fails(
    "node",
    'Name matches "(nomad"',
    /Failed to compile regular expression "\(nomad": .*missing closing \)/,
    "regexp",
  ),

  // -- contains / in on strings, maps, arrays --
  match("eval", 'StatusDescription contains "placement"', true),
  match("eval", '"placement" in StatusDescription', true),
  match("eval", 'StatusDescription not contains "conflict"', false),
  match("eval", '"cache" in FailedTGAllocs', true),
  match("eval", '"web" in FailedTGAllocs', false),
  match("eval", '"web" not in FailedTGAllocs', true),
  match("node", '"rack" in Meta', true),
  match("node", '"r12" in Meta.rack', true),
  match("alloc", "Job.Datacenters contains dc2", true),
  match("alloc", '"dc3" in Job.Datacenters', false),
  match("alloc", "Job.TaskGroups.0.Tasks.0.Config.ports contains http", true),
  match("node", "NodeResources.Cpu.ReservableCpuCores contains 3", true),
  match("node", "NodeResources.Cpu.ReservableCpuCores not contains 9", true),
  fails(
    "node",
    'NodeResources.Cpu.ReservableCpuCores contains "three"',
    /strconv\.ParseInt: parsing "three"/,
  ),
  fails(
    "alloc",
    '"unknown" in AllocStates',
    /unable to find suitable primitive comparison function for "in" comparison/,
  ),
  fails(
    "eval",
    '"5" in Priority',
    /Cannot perform in\/contains operations on type int for selector: "Priority"/,
  ),
  match("eval", '"x" in RelatedEvals', false),

  // -- is empty / is not empty on missing and empty collections --
  match("eval", "RelatedEvals is empty", true),
  match("eval", "FailedTGAllocs is not empty", true),
  match("eval", "FailedTGAllocs.web is empty", true),
  match("node", "Meta.empty is empty", true),
  match("node", "Meta.missing is not empty", false),
  match("node", "DrainStrategy is empty", true),
  match("node", "Links is empty", false),
  match("alloc", "AllocStates is not empty", true),
  match("alloc", "RescheduleTracker is empty", true),
  match("alloc", "PreviousAllocation is empty", true),
  match("alloc", "TaskStates.redis is empty", true),
  fails("eval", "Priority is empty", /cannot take the length of a value of type int/),

  // -- selectors: dots, indexes, map keys with dots and spaces, JSON pointers --
  match("node", 'Attributes["kernel.name"] == "linux"', true),
  match("node", '"/Attributes/kernel.name" == linux', true),
  match("node", 'Meta["team owner"] == platform', true),
  match("node", "Drivers.docker.Healthy == true", true),
  match("node", "Drivers.exec.Detected == true or Drivers.docker.Detected == true", true),
  match("node", "NodeResources.Networks.0.Mode == host", true),
  match("node", 'Events.0.Message contains "registered"', true),
  match("node", "HostVolumes.certs.ReadOnly == true", true),
  match("eval", 'FailedTGAllocs["cache"].NodesAvailable.dc1 == 3', true),
  // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's constraint keys contain ${…} literally.
  match("eval", 'FailedTGAllocs.cache.ConstraintFiltered["${attr.kernel.name} = windows"] == 3', true),
  match("eval", 'ClassEligibility["v1:8814186386389541384"] == true', true),
  match("alloc", "TaskStates.nginx.State == running and TaskStates.nginx.Restarts == 2", true),
  match("alloc", 'TaskStates["log-shipper"].Failed == true', true),
  match("alloc", '"nginx" in TaskStates', true),
  match("alloc", "AllocStates.0.Value == unknown and AllocStates.1.Value == running", true),
  match("alloc", 'Job.Meta.owner == "team-a" and Job.Priority == 70 and Job.Stop == false', true),
  match("alloc", 'Job.TaskGroups.0.Tasks.0.Config.image matches "^nginx:"', true),
  match("alloc", 'Name == "web.frontend[0]" and Name contains "[0]"', true),

  // -- missing keys: map keys take the operator's disposition, struct fields are errors --
  match("node", 'Attributes["unique.platform.aws.instance-type"] == "t3.large"', false),
  match("node", 'Attributes["unique.platform.aws.instance-type"] != "t3.large"', true),
  match("node", 'Meta.missing matches "x"', false),
  match("node", 'Meta.missing not matches "x"', true),
  match("node", '"missing" not in Meta', true),
  match("eval", 'ClassEligibility["v1:999"] == true', false),
  match("eval", 'ClassEligibility["v1:999"] != true', true),
  match("node", 'Drivers.exec.Attributes["driver.exec"] == "1"', false),
  fails("eval", 'Stauts == "pending"', /\/Stauts at part 0: couldn't find struct field with name "Stauts"/),
  fails(
    "node",
    'Attributes.kernel.name == "linux"',
    /\/Attributes\/kernel\/name at part 1: couldn't find key "kernel"/,
  ),
  fails("alloc", "TaskStates.redis.State == running", /couldn't find key "redis"/),
  fails("eval", "FailedTGAllocs.web.CoalescedFailures == 2", /at part 1: couldn't find key "web"/),
  fails("node", "NodeResources.Networks.5.Mode == host", /index 5 is out of range \(length = 1\)/),
  fails("node", "Status.code == 1", /at part 1: invalid value kind: string/),
  fails("eval", 'RelatedEvals == "x"', /unable to find suitable primitive comparison function for matching/),
  fails(
    "eval",
    "FailedTGAllocs == cache",
    /unable to find suitable primitive comparison function for matching/,
  ),
  // A clause that is never reached cannot fail: `and` / `or` short-circuit as in bexpr.
  match("eval", 'Status == "pending" and Stauts == "pending"', false),
  match("eval", 'Status == "blocked" or Stauts == "pending"', true),

  // -- string literal details --
  match("alloc", 'Job.Meta.owner == "team\\x2da"', true),
  match("alloc", 'Job.Meta.owner == "team\\u002Da"', true),
  // bexpr quirk kept for compatibility: a quoted value that looks like a JSON
  // pointer is read as one, so "/srv/www" means the text "srv/www".
  match("alloc", 'Job.Meta.path == "/srv/www"', false),
  match("alloc", "Job.Meta.path == `/srv/www`", true),

  // -- syntax errors, with bexpr's positions and messages --
  fails(
    "eval",
    'Status = "pending"',
    /^1:8 \(7\): no match found, expected: "!=", "==", "contains", "in", "is", "matches", "not" or \[ \\t\\r\\n\]$/,
    "syntax",
  ),
  fails("eval", "Priority > 50", /^1:10 \(9\): no match found, expected: /, "syntax"),
  fails("eval", '(Status == "pending"', /^1:21 \(20\): rule "grouping": Unmatched parentheses$/, "syntax"),
  fails(
    "eval",
    'Status == "pending" and',
    /^1:24 \(23\): no match found, expected: .*\[ \\t\\r\\n\]/,
    "syntax",
  ),
  fails("node", "Meta[rack] == r12", /^1:6 \(5\): rule "index": Invalid index$/, "syntax"),
  fails("eval", 'Status == "pend', /^1:16 \(15\): rule "string": Unterminated string literal$/, "syntax"),
  fails("eval", 'JobID == "a\\"b"', /^1:10 \(9\): rule "string": invalid syntax$/, "syntax"),
  fails("eval", 'JobID matches "^\\d+$"', /^1:15 \(14\): rule "string": invalid syntax$/, "syntax"),
  fails("eval", "Priority == 50x", /^1:15 \(14\): rule "number": Invalid number literal$/, "syntax"),
  fails("eval", "", /^1:1 \(0\): no match found, expected: /, "syntax"),
  fails("eval", 'Status == "pending"\nand Priority = 50', /^2:14 \(33\): no match found/, "syntax"),
  fails(
    "node",
    'Name == "é" junk',
    /^1:13 \(13\): no match found, expected: "and", "or", \[ \\t\\r\\n\] or EOF$/,
    "syntax",
  ),
];

describe("compileFilter / Filter.matches", () => {
  it("covers at least 60 expressions", () => {
    expect(cases.length).toBeGreaterThanOrEqual(60);
  });

  it.each(cases.map((c) => [c.expr, c] as const))("%s", (_name, c) => {
    const row = rows[c.on];
    if ("want" in c) {
      expect(compileFilter(c.expr).matches(row)).toBe(c.want);
      return;
    }
    let caught: unknown;
    try {
      compileFilter(c.expr).matches(row);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(FilterError);
    const err = caught as FilterError;
    expect(err.kind).toBe(c.kind);
    expect(err.detail).toMatch(c.error);
    expect(err.message.startsWith("filter: ")).toBe(true);
  });
});

/** The error cases of go-bexpr's grammar/grammar_test.go, which fix the exact wording Nomad returns. */
describe("matches go-bexpr's own parser error tests", () => {
  it.each([
    [
      '"/hy-phen/under_score/pi|pe/do.t/ti~lde/" == 3',
      '1:43 (42): no match found, expected: "in", "not" or [ \\t\\r\\n]',
    ],
    ['foo == "12x', '1:12 (11): rule "string": Unterminated string literal'],
    ["foo == `12x", '1:12 (11): rule "string": Unterminated string literal'],
    ["foo == 3x", '1:9 (8): rule "number": Invalid number literal'],
    ["foo[3] == abc", '1:5 (4): rule "index": Invalid index'],
    ['x in foo["abc"', '1:15 (14): rule "index": Unclosed index expression'],
    ['foo["abc" == 3', '1:11 (10): rule "index": Unclosed index expression'],
    ["x in 32", '1:6 (5): rule "match": Invalid selector'],
    ["32 == 32", '1:4 (3): no match found, expected: "in", "not" or [ \\t\\r\\n]'],
    ["32 is empty", '1:4 (3): no match found, expected: "in", "not" or [ \\t\\r\\n]'],
    ["x in foo abc", '1:10 (9): no match found, expected: "and", "or", [ \\t\\r\\n] or EOF'],
    [
      "x in foo and ",
      '1:14 (13): no match found, expected: "(", "-", "0", "\\"", "`", "not", [ \\t\\r\\n], [1-9] or [a-zA-Z]',
    ],
    [
      "x in foo or ",
      '1:13 (12): no match found, expected: "(", "-", "0", "\\"", "`", "not", [ \\t\\r\\n], [1-9] or [a-zA-Z]',
    ],
    [
      "x in foo or not ",
      '1:17 (16): no match found, expected: "!=", "(", "-", "0", "==", "\\"", "`", "contains", "in", "is", ' +
        '"matches", "not", [ \\t\\r\\n], [1-9] or [a-zA-Z]',
    ],
    ["(foo == 4", '1:10 (9): rule "grouping": Unmatched parentheses'],
  ])("%j", (input, detail) => {
    expect(() => compileFilter(input)).toThrowError(expect.objectContaining({ kind: "syntax", detail }));
  });
});

describe("error positions", () => {
  it("reports where an evaluation error's clause starts", () => {
    const f = compileFilter('Priority == 50 and\n  Stauts == "x"');
    expect(() => f.matches(evaluation)).toThrowError(
      /^filter: 2:3 \(21\): error finding value in datum: \/Stauts at part 0: couldn't find struct field/,
    );
  });

  it("reports where a bad regular expression is", () => {
    try {
      compileFilter("JobID == web or JobID matches `[z-a]`");
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(FilterError);
      expect((err as FilterError).position).toEqual({ offset: 30, line: 1, column: 31 });
      expect((err as FilterError).detail).toMatch(/invalid character class range/);
    }
  });

  it("refuses absurd nesting instead of overflowing the stack", () => {
    const deep = `${"(".repeat(5000)}Status == x${")".repeat(5000)}`;
    expect(() => compileFilter(deep)).toThrowError(/nests parentheses and "not" deeper than 64 levels/);
  });
});

describe("Go RE2 semantics", () => {
  const re = (pattern: string, text: string) =>
    compileFilter(`Name matches \`${pattern}\``).matches({ Name: text });

  it.each([
    ["\\d+", "١٢٣", false], // Go's \d is ASCII only
    ["^\\s$", "\u00a0", false], // so is \s, and it has no \v
    ["^\\s$", "\u000b", false],
    ["^\\w+$", "héllo", false],
    ["a.c", "a\nc", false],
    ["(?s)a.c", "a\nc", true],
    ["^b", "a\nb", false],
    ["(?m)^b$", "a\nb\nc", true],
    ["a$", "a\n", false],
    ["\\Aab\\z", "ab", true],
    ["\\Q.*\\E", "x.*y", true],
    ["\\Q.*\\E", "xy", false],
    ["\\x{1F600}", "😀", true],
    ["^.$", "😀", true],
    ["\\pL+\\p{Greek}", "abΩ", true],
    ["\\PL", "abc", false],
    ["[[:^alpha:]]", "abc", false],
    ["[^[:space:]x]", " x", false],
    ["a{2,3}", "aa", true],
    ["a{,3}", "a{,3}", true],
    ["x{1001}", "x", null],
    ["]", "]", true],
    ["(?U)a+", "aaa", true],
    ["(?i:K)", "k", true],
    ["(?P<year>[0-9]{4})-(?P<month>[0-9]{2})", "2023-05", true],
    ["\\-\\#\\@", "-#@", true],
    ["\\101", "A", true],
  ] as const)("%s on %j", (pattern, text, want) => {
    if (want === null) expect(() => re(pattern, text)).toThrowError(FilterError);
    else expect(re(pattern, text)).toBe(want);
  });
});
