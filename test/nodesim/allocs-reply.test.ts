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
  Resources: { CPU: 100, MemoryMB: 256 },
  TaskResources: { app: { CPU: 100, Networks: [{ DynamicPorts: [{ Label: "}" }] }] } },
  Metrics: { ScoreMetaData: [{ NodeID: "n", NormScore: 0.5 }], NodesAvailable: { dc1: 3 } },
  SignedIdentities: { app: "eyJhbGciOi.J9.x" },
  ...extra,
  Job: j,
});

const reply = (allocs: unknown[]) =>
  Buffer.from(JSON.stringify({ Allocs: allocs, Index: 9, KnownLeader: true }));

const UNREAD = ["Resources", "TaskResources", "Metrics"];

/** JSON.parse's result with each allocation's unread objects null, as parseAllocsReply gives it. */
function expected(bytes: Buffer): unknown {
  const r = JSON.parse(bytes.toString("utf8")) as { Allocs: Record<string, unknown>[] };
  for (const a of r.Allocs)
    for (const f of UNREAD) if (a[f] !== null && typeof a[f] === "object") a[f] = null;
  return r;
}

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
      expect(parseAllocsReply(bytes, jobs)).toEqual(expected(bytes));
    }
  });

  it("leaves out the fields simAllocSpec never reads, and only an allocation's own", () => {
    const jobs = new JobTexts();
    const a = job("a");
    const bare = { ID: "2", Name: "2.g[0]", TaskGroup: "g", Metrics: null, Job: a };
    const bytes = reply([
      alloc("1", a),
      bare,
      alloc("3", a, { DesiredDescription: '"Metrics":{ in a string' }),
    ]);
    const got = parseAllocsReply(bytes, jobs) as { Allocs: Record<string, unknown>[] };
    expect(got).toEqual(expected(bytes));
    expect(got.Allocs[0]).toMatchObject({ ID: "1", Metrics: null, Resources: null, TaskResources: null });
    expect(got.Allocs[0]!.SignedIdentities).toEqual({ app: "eyJhbGciOi.J9.x" });
    expect(got.Allocs[0]!.AllocatedResources).toEqual({ Tasks: { app: { Cpu: { CpuShares: 100 } } } });
    expect(got.Allocs[1]).toEqual({ ID: "2", Name: "2.g[0]", TaskGroup: "g", Metrics: null, Job: a });
    // Parsed once, shared: the fast path, not the plain parse.
    expect(got.Allocs[2]!.Job).toBe(got.Allocs[0]!.Job);
  });

  it("falls back to a plain parse when an unread field's key is not an allocation's own", () => {
    const jobs = new JobTexts();
    // Before the allocation's own: the first key of the name met is the nested one.
    const nested = { DesiredTransition: { Metrics: { Migrate: true } }, ...alloc("1", job("a")) };
    const bytes = reply([nested]);
    const got = parseAllocsReply(bytes, jobs) as { Allocs: Record<string, unknown>[] };
    expect(got).toEqual(expected(bytes));
    expect(got.Allocs[0]!.DesiredTransition).toEqual({ Metrics: { Migrate: true } });
    expect(got.Allocs[0]!.Metrics).toBeNull();
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
    expect(parseAllocsReply(bytes, jobs)).toEqual(expected(bytes));
    const noJob = Buffer.from(JSON.stringify({ Allocs: [{ ID: "x", Job: null }], Index: 1 }));
    expect(parseAllocsReply(noJob, jobs)).toEqual({ Allocs: [{ ID: "x", Job: null }], Index: 1 });
  });
});
