import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { clientReplyJson } from "../../../src/api/client-rpc/reply-json.ts";

const parsedAsJsonStringify = (body: Record<string, unknown>) => JSON.parse(JSON.stringify(body));

describe("a client RPC reply as JSON", () => {
  it("says what JSON.stringify says, with the job shared by allocations written out in each", () => {
    const job = { ID: "web", TaskGroups: [{ Name: "g", Count: 3 }], Meta: null };
    const body = {
      Allocs: [
        { ID: "a1", Job: job, NodeID: "n1" },
        { ID: "a2", Job: job, SignedIdentities: { app: "jwt" } },
        { ID: "a3", Job: null },
        { Job: job },
        { ID: "a4" },
      ],
      Index: 12,
      LastContact: 0,
      KnownLeader: true,
      NextToken: "",
      Missing: undefined,
    };
    expect(JSON.parse(clientReplyJson(body))).toEqual(parsedAsJsonStringify(body));
  });

  it("leaves replies without an allocation list to JSON.stringify", () => {
    const body = { Allocs: { a1: 3 }, MigrateTokens: {}, Index: 4 };
    expect(clientReplyJson(body)).toBe(JSON.stringify(body));
  });

  it("holds for any allocations and jobs", () => {
    const fields = fc.dictionary(
      fc.string().filter((k) => k !== "Job" && k !== "__proto__"),
      fc.jsonValue(),
    );
    fc.assert(
      fc.property(fc.array(fields, { maxLength: 4 }), fields, fc.array(fields), (jobs, meta, allocs) => {
        const body = {
          Allocs: allocs.map((a, i) => (jobs.length > 0 ? { ...a, Job: jobs[i % jobs.length] } : a)),
          ...meta,
        };
        expect(JSON.parse(clientReplyJson(body))).toEqual(parsedAsJsonStringify(body));
      }),
    );
  });
});
