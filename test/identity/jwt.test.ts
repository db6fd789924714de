import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { IdentityClaims } from "../../src/identity/claims.ts";
import { jwtOf, signingInput } from "../../src/identity/jwt.ts";

const b64url = (text: string) => Buffer.from(text, "utf8").toString("base64url");

/** The signing input as JSON.stringify and Buffer make it: what signingInput's bytes must be. */
function expectedInput(keyId: string, c: IdentityClaims): string {
  const header = b64url(JSON.stringify({ alg: "EdDSA", kid: keyId, typ: "JWT" }));
  const { nomad_namespace, nomad_job_id, nomad_allocation_id, nomad_task, nbf, iat } = c;
  const payload = { nomad_namespace, nomad_job_id, nomad_allocation_id, nomad_task, nbf, iat };
  return `${header}.${b64url(JSON.stringify(payload))}`;
}

describe("a JWT's signing input", () => {
  it("is JSON.stringify's payload, base64url, after the key's header, for any text and times", () => {
    const text = fc.oneof(
      fc.string(),
      fc.string({ unit: "binary", maxLength: 40 }),
      fc.string({ unit: "grapheme", maxLength: 20 }),
      fc.string({ maxLength: 1500, size: "max" }),
      fc.constantFrom("default", 'a"b', "a\\b", "\u0000\u001f\u007f", "\ud800", "é", "web/api"),
    );
    const time = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(1_700_000_000, -0, 0));
    fc.assert(
      fc.property(text, text, fc.uuid(), text, time, time, (ns, job, id, task, nbf, iat) => {
        const claims: IdentityClaims = {
          nomad_namespace: ns,
          nomad_job_id: job,
          nomad_allocation_id: id,
          nomad_task: task,
          nbf,
          iat,
        };
        expect(signingInput("9c2e0f4a-3b8e-4c65-a1d2-6b7f0e9d8c11", claims)).toBe(
          expectedInput("9c2e0f4a-3b8e-4c65-a1d2-6b7f0e9d8c11", claims),
        );
      }),
      { numRuns: 2000 },
    );
  });
});

describe("a JWT joined from its signing input and signature", () => {
  it("is the two parts with a dot between, however long, one after another", () => {
    const part = (n: number, c: string) => c.repeat(n);
    for (const n of [0, 1, 300, 1023, 1024, 5000, 20]) {
      const input = `${part(n, "a")}.${part(n >> 1, "B")}`;
      const signature = part(86, "-_".charAt(n & 1));
      expect(jwtOf(input, signature)).toBe(`${input}.${signature}`);
    }
  });
});
