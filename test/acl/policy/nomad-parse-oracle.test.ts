import { afterAll, describe, expect, it } from "vitest";
import { PolicyParseError, parsePolicy } from "../../../src/acl/policy/parse-policy.ts";
import { HclParser } from "../../../src/jobs/hcl/hcl-parser.ts";
import { NOMAD_PARSE_FIXTURES } from "./nomad-parse-fixtures.ts";

/**
 * Every recorded rules text parses to what Nomad's acl.Parse gave, or fails
 * with its text. Two differences are by design and normalized here: Go
 * prints a set `Variables` pointer as its address (chronomad prints a fixed
 * stand-in), and for HCL text Nomad's decode errors carry HCL v1's line and
 * column where chronomad's say `-` (hcl2json keeps no positions).
 */

const hcl = new HclParser();
afterAll(() => hcl.close());

function expected(rules: string, err: string): string {
  let want = err.replace(/\(0x[0-9a-f]+\)/g, "(0xc000010000)");
  if (!rules.trimStart().startsWith("{"))
    want = want.replace(/^Failed to parse ACL Policy: At \d+:\d+:/, "Failed to parse ACL Policy: At -:");
  return want;
}

describe("parsePolicy against Nomad's acl.Parse", () => {
  it("has the recorded cases", () => {
    expect(NOMAD_PARSE_FIXTURES.length).toBeGreaterThan(300);
  });

  NOMAD_PARSE_FIXTURES.forEach(({ rules, nomad }, i) => {
    it(`#${i} ${JSON.stringify(rules.slice(0, 48))}`, async () => {
      if (nomad.ok) {
        const got = await parsePolicy(rules, hcl);
        expect(JSON.parse(JSON.stringify(got))).toStrictEqual({ ...nomad.ok, Raw: rules });
        return;
      }
      const err = await parsePolicy(rules, hcl).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PolicyParseError);
      expect((err as Error).message).toBe(expected(rules, nomad.err!));
    });
  });
});

describe("where HCL2 reads differently from Nomad's HCL v1 (by design)", () => {
  it("refuses a repeated attribute, which HCL v1 concatenates or overwrites", async () => {
    const err = await parsePolicy(
      `namespace "x" {\n  capabilities = ["read-job"]\n  capabilities = ["list-jobs"]\n}\n`,
      hcl,
    ).catch((e: Error) => e.message);
    expect(err).toMatch(/^Failed to parse ACL Policy: input\.hcl:3,3-15: Attribute redefined/);
  });

  it("reads HCL2's null as an empty value, which HCL v1 does not know", async () => {
    const p = await parsePolicy(`namespace "x" {\n  policy = null\n}`, hcl);
    expect(p.Namespaces?.[0]?.Policy).toBe("");
  });
});
