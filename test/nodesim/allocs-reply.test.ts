import { describe, expect, it } from "vitest";
import { JobTexts, parseAllocsReply } from "../../src/nodesim/allocs-reply.ts";

const job = (id: string, extra: Record<string, unknown> = {}) => ({
  ID: id,
  Name: id,
  Type: "service",
  TaskGroups: [{ Name: "g", Tasks: [{ Name: "app", Config: { run_for: "1s" } }] }],
  Meta: { note: 'braces } { and "quotes" \\ and ünïcödé', ...extra },
});

/** An allocation as the server writes it: its job last. */
const alloc = (id: string, j: unknown, extra: Record<string, unknown> = {}) => ({
  ID: id,
  Name: `${id}.g[0]`,
  TaskGroup: "g",
  AllocatedResources: { Tasks: { app: { Cpu: { CpuShares: 100 } } } },
  Metrics: { ScoreMetaData: [{ NodeID: "n", NormScore: 0.5 }] },
  ...extra,
  Job: j,
});

const reply = (allocs: unknown[]) =>
  Buffer.from(JSON.stringify({ Allocs: allocs, Index: 9, KnownLeader: true }));

describe("parseAllocsReply", () => {
  it("gives what JSON.parse gives, for allocations of several jobs, texts met before or not", () => {
    const jobs = new JobTexts();
    const a = job("a");
    const b = job("b", { Job: "a key of the same name inside a job" });
    for (const allocs of [
      [alloc("1", a)],
      [alloc("2", a), alloc("3", b), alloc("4", a)],
      [alloc("5", b, { DesiredDescription: 'ünïcödé "Job":{} in a string' })],
      [],
    ]) {
      const bytes = reply(allocs);
      expect(parseAllocsReply(bytes, jobs)).toEqual(JSON.parse(bytes.toString("utf8")));
    }
  });

  it("parses a job's text once: allocations of one job version share its object", () => {
    const jobs = new JobTexts();
    const first = parseAllocsReply(reply([alloc("1", job("a"))]), jobs) as { Allocs: { Job: unknown }[] };
    const second = parseAllocsReply(reply([alloc("2", job("a")), alloc("3", job("a", { v: 2 }))]), jobs) as {
      Allocs: { Job: unknown }[];
    };
    expect(second.Allocs[0]!.Job).toBe(first.Allocs[0]!.Job);
    expect(second.Allocs[1]!.Job).not.toBe(first.Allocs[0]!.Job);
    expect(second.Allocs[1]!.Job).toEqual(job("a", { v: 2 }));
  });

  it("falls back to a plain parse when a Job key is not an allocation's job", () => {
    const jobs = new JobTexts();
    const odd = alloc("1", job("a"), { Other: { Job: { ID: "not the allocation's" } } });
    const bytes = reply([odd]);
    expect(parseAllocsReply(bytes, jobs)).toEqual(JSON.parse(bytes.toString("utf8")));
    const noJob = Buffer.from(JSON.stringify({ Allocs: [{ ID: "x", Job: null }], Index: 1 }));
    expect(parseAllocsReply(noJob, jobs)).toEqual({ Allocs: [{ ID: "x", Job: null }], Index: 1 });
  });
});
