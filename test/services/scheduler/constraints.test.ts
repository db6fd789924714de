import { describe, expect, it } from "vitest";
import type { NodeRow } from "../../../projections/nodes.ts";
import {
  checkConstraint,
  hasDistinctHostsConstraint,
  meetsConstraint,
  resolveTarget,
} from "../../../src/services/scheduler/constraints.ts";

// biome-ignore-start lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
const node = {
  ID: "n-1",
  Name: "web-1",
  Datacenter: "us-east1",
  NodeClass: "gpu",
  NodePool: "default",
  Attributes: { "kernel.name": "linux", "nomad.version": "1.6.1", "cpu.numcores": "8", tags: "a,b, c" },
  Meta: { rack: "r1" },
} as unknown as NodeRow;

describe("Nomad's constraint operators (scheduler/feasible.go checkConstraint)", () => {
  it("resolves node, attr and meta targets; a literal is itself; an unknown target is missing", () => {
    expect(resolveTarget("${node.unique.id}", node)).toBe("n-1");
    expect(resolveTarget("${node.unique.name}", node)).toBe("web-1");
    expect(resolveTarget("${node.datacenter}", node)).toBe("us-east1");
    expect(resolveTarget("${node.class}", node)).toBe("gpu");
    expect(resolveTarget("${attr.kernel.name}", node)).toBe("linux");
    expect(resolveTarget("${meta.rack}", node)).toBe("r1");
    expect(resolveTarget("${meta.zone}", node)).toBeUndefined();
    expect(resolveTarget("${foo.bar}", node)).toBeUndefined();
    expect(resolveTarget("linux", node)).toBe("linux");
  });

  const cases: [string, string, string, boolean][] = [
    ["${attr.kernel.name}", "=", "linux", true],
    ["${attr.kernel.name}", "==", "linux", true],
    ["${attr.kernel.name}", "is", "windows", false],
    ["${meta.zone}", "=", "", false],
    ["${attr.kernel.name}", "!=", "windows", true],
    ["${attr.kernel.name}", "not", "linux", false],
    // Nomad compares a missing value as "": missing != "x" holds, missing != missing does not.
    ["${meta.zone}", "!=", "x", true],
    ["${meta.zone}", "!=", "${meta.other}", false],
    ["${attr.cpu.numcores}", ">", "10", false], // numerically 8 < 10 (lexically "8" > "10")
    ["${attr.cpu.numcores}", ">=", "8", true],
    ["${attr.cpu.numcores}", "<", "10", true],
    ["${attr.cpu.numcores}", "<=", "7", false],
    ["${attr.kernel.name}", "<", "mac", true], // lexical
    ["${meta.zone}", "<", "z", false],
    ["${meta.rack}", "is_set", "", true],
    ["${meta.zone}", "is_set", "", false],
    ["${meta.zone}", "is_not_set", "", true],
    ["${meta.rack}", "is_not_set", "", false],
    ["${attr.nomad.version}", "version", ">= 1.5, < 1.7", true],
    ["${attr.nomad.version}", "version", "~> 1.5.0", false],
    ["${attr.nomad.version}", "semver", ">= 1.6.0", true],
    ["${attr.nomad.version}", "semver", "< 1.6.1", false],
    ["${attr.kernel.name}", "regexp", "^lin", true],
    ["${attr.kernel.name}", "regexp", "^win", false],
    ["${attr.tags}", "set_contains", "a,c", true],
    ["${attr.tags}", "set_contains_all", "a,d", false],
    ["${attr.tags}", "set_contains_any", "d,b", true],
    ["${attr.tags}", "set_contains_any", "d,e", false],
    ["${attr.kernel.name}", "bogus", "linux", false],
  ];
  for (const [l, op, r, want] of cases) {
    it(`${l} ${op} ${JSON.stringify(r)} is ${want}`, () => {
      expect(meetsConstraint({ LTarget: l, Operand: op, RTarget: r }, node)).toBe(want);
    });
  }

  it("leaves distinct_hosts and distinct_property to the iterators that see the plan", () => {
    expect(meetsConstraint({ LTarget: "", Operand: "distinct_hosts", RTarget: "" }, node)).toBe(true);
    expect(
      meetsConstraint({ LTarget: "${meta.rack}", Operand: "distinct_property", RTarget: "1" }, node),
    ).toBe(true);
    expect(checkConstraint("distinct_property", undefined, undefined)).toBe(false);
  });

  it("reads distinct_hosts as Nomad does: the first one decides, an unparsable RTarget means true", () => {
    const dh = (RTarget: string) => ({ LTarget: "", Operand: "distinct_hosts", RTarget });
    expect(hasDistinctHostsConstraint(null)).toBe(false);
    expect(hasDistinctHostsConstraint([dh("")])).toBe(true);
    expect(hasDistinctHostsConstraint([dh("true")])).toBe(true);
    expect(hasDistinctHostsConstraint([dh("false")])).toBe(false);
    expect(hasDistinctHostsConstraint([dh("0")])).toBe(false);
    expect(hasDistinctHostsConstraint([dh("F")])).toBe(false);
    expect(hasDistinctHostsConstraint([dh("yes")])).toBe(true);
    expect(hasDistinctHostsConstraint([dh("false"), dh("true")])).toBe(false);
  });
});
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
