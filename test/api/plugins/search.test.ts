import { afterEach, describe, expect, it } from "vitest";
import { Scenario } from "../../services/scheduler/scenario.ts";

const scenarios: Scenario[] = [];
async function start(nodes = 0) {
  const s = await Scenario.start();
  scenarios.push(s);
  for (let i = 0; i < nodes; i++)
    await s.addNode({ Drivers: { raw_exec: { Detected: true, Healthy: true } } });
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

/** The api test suite's job: batch "job1" named "redis", group1/task1 running raw_exec /bin/sleep. */
function apiTestJob(id = "job1", fields: Record<string, unknown> = {}) {
  return {
    ID: id,
    Name: "redis",
    Type: "batch",
    Datacenters: ["dc1"],
    TaskGroups: [
      {
        Name: "group1",
        Count: 1,
        Tasks: [
          {
            Name: "task1",
            Driver: "raw_exec",
            Config: { command: "/bin/sleep" },
            Resources: { CPU: 100, MemoryMB: 256 },
          },
        ],
      },
    ],
    ...fields,
  };
}

interface SearchBody {
  Matches: Record<string, string[] | null>;
  Truncations: Record<string, boolean>;
  Index: number;
  KnownLeader: boolean;
}

interface FuzzyBody {
  Matches: Record<string, { ID: string; Scope?: string[] }[]>;
  Truncations: Record<string, boolean>;
  Index: number;
}

const search = async (s: Scenario, body: unknown, query = "") => {
  const res = await s.call(`/v1/search${query}`, "PUT", body);
  return { ...res, body: res.body as SearchBody };
};
const fuzzy = async (s: Scenario, body: unknown, query = "") => {
  const res = await s.call(`/v1/search/fuzzy${query}`, "POST", body);
  return { ...res, body: res.body as FuzzyBody };
};

describe("PUT /v1/search", () => {
  it("matches job IDs by prefix in the namespace, with the index and Nomad's reply fields", async () => {
    const s = await start();
    const reg = await s.register(apiTestJob("job1"));
    const res = await search(s, { Prefix: "jo", Context: "jobs" });
    expect(res.status, res.text).toBe(200);
    expect(res.body.Matches).toEqual({ jobs: ["job1"] });
    expect(res.body.Truncations).toEqual({ jobs: false });
    expect(res.body).toMatchObject({ Index: res.index, KnownLeader: true });
    expect(res.index).toBeGreaterThanOrEqual(reg.JobModifyIndex);
    // POST too, and no match is Nomad's null.
    const none = await s.call("/v1/search", "POST", { Prefix: "nope", Context: "jobs" });
    expect((none.body as SearchBody).Matches).toEqual({ jobs: null });
  });

  it("searches every context with `all`, by UUID prefix for allocations, evaluations and nodes", async () => {
    const s = await start(1);
    await s.register(apiTestJob("job1"));
    await s.idle();
    const [alloc] = s.allocs("job1");
    const evalID = s.evals("job1")[0]!.ID;
    const nodeID = s.nodes[0]!.id;

    const byAlloc = await search(s, { Prefix: alloc!.ID.slice(0, 8), Context: "all" });
    expect(byAlloc.body.Matches.allocs).toEqual([alloc!.ID]);
    // Every context is answered, kinds chronomad holds none of included.
    expect(Object.keys(byAlloc.body.Matches).sort()).toEqual(
      [
        "allocs",
        "deployment",
        "evals",
        "jobs",
        "namespaces",
        "node_pools",
        "nodes",
        "plugins",
        "scaling_policy",
        "vars",
        "volumes",
      ].sort(),
    );
    // An odd number of hex digits is looked up one shorter, then matched whole (Nomad's roundUUIDDownIfOdd).
    const odd = await search(s, { Prefix: evalID.slice(0, 5), Context: "evals" });
    expect(odd.body.Matches.evals).toContain(evalID);
    expect((await search(s, { Prefix: nodeID.slice(0, 11), Context: "nodes" })).body.Matches.nodes).toEqual([
      nodeID,
    ]);
    // Upper-case hex is looked up, but IDs are lower case: nothing matches.
    const upper = await search(s, { Prefix: nodeID.toUpperCase(), Context: "nodes" });
    expect(upper.status).toBe(200);
    expect(upper.body.Matches.nodes ?? []).not.toContain(nodeID);

    // A prefix that cannot be a UUID leaves the UUID contexts out, as Nomad's index errors do.
    const named = await search(s, { Prefix: "job", Context: "all" });
    expect(named.body.Matches.jobs).toEqual(["job1"]);
    for (const c of ["allocs", "evals", "nodes", "deployment"]) {
      expect(named.body.Matches).not.toHaveProperty(c);
      expect(named.body.Truncations).not.toHaveProperty(c);
    }
    expect(named.body.Matches.namespaces).toBeNull();
    const ns = await search(s, { Prefix: "def", Context: "all" });
    expect(ns.body.Matches.namespaces).toEqual(["default"]);
    expect(ns.body.Matches.node_pools).toEqual(["default"]);
  });

  it("answers 20 IDs per context and says the rest were truncated", async () => {
    const s = await start();
    for (let i = 0; i < 22; i++) await s.register(apiTestJob(`batch-${String(i).padStart(2, "0")}`));
    const res = await search(s, { Prefix: "batch-", Context: "jobs" });
    expect(res.body.Matches.jobs).toHaveLength(20);
    expect(res.body.Matches.jobs![0]).toBe("batch-00");
    expect(res.body.Truncations.jobs).toBe(true);
    const few = await search(s, { Prefix: "batch-2", Context: "jobs" });
    expect(few.body).toMatchObject({
      Matches: { jobs: ["batch-20", "batch-21"] },
      Truncations: { jobs: false },
    });
  });

  it("searches the namespace asked for, or every one with *", async () => {
    const s = await start();
    expect((await s.call("/v1/namespace/other", "PUT", { Name: "other" })).status).toBe(200);
    await s.register(apiTestJob("job1", { Namespace: "other" }));
    expect((await search(s, { Prefix: "job", Context: "jobs" })).body.Matches.jobs).toBeNull();
    expect(
      (await search(s, { Prefix: "job", Context: "jobs" }, "?namespace=other")).body.Matches.jobs,
    ).toEqual(["job1"]);
    // The namespace may come in the body too (Nomad's QueryOptions); the query string wins.
    expect(
      (await search(s, { Prefix: "job", Context: "jobs", Namespace: "other" })).body.Matches.jobs,
    ).toEqual(["job1"]);
    expect((await search(s, { Prefix: "job", Context: "jobs" }, "?namespace=*")).body.Matches.jobs).toEqual([
      "job1",
    ]);
  });

  it("refuses an unknown context and a wrong field type with a 400 naming it, and other methods with 405", async () => {
    const s = await start();
    const bad = await search(s, { Prefix: "x", Context: "widgets" });
    expect(bad.status).toBe(400);
    expect(bad.text).toBe(
      `context must be one of [allocs jobs nodes node_pools evals deployment plugins volumes scaling_policy vars namespaces] or 'all' for all contexts; got "widgets"`,
    );
    const wrong = await search(s, { Prefix: 7, Context: "jobs" });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toMatch(/Prefix/);
    const get = await s.call("/v1/search");
    expect(get.status).toBe(405);
    expect(get.text).toBe("Invalid method");
    // Unknown body fields are ignored, as Nomad's decoder does.
    expect((await search(s, { Prefix: "x", Context: "jobs", Region: "global", Extra: 1 })).status).toBe(200);
  });
});

describe("PUT /v1/search/fuzzy", () => {
  it("finds a job's command with its scope, as the api test suite expects", async () => {
    const s = await start();
    await s.register(apiTestJob("job1"));
    const res = await fuzzy(s, { Text: "bin", Context: "all" });
    expect(res.status, res.text).toBe(200);
    expect(res.body.Matches.commands).toEqual([
      { ID: "/bin/sleep", Scope: ["default", "job1", "group1", "task1"] },
    ]);
    // Every fuzzy-searched context says whether it was truncated; the ID-prefix ones answer a list.
    expect(res.body.Truncations).toMatchObject({
      jobs: false,
      allocs: false,
      nodes: false,
      namespaces: false,
    });
    expect(res.body.Matches.evals).toEqual([]);
    expect(res.body.Index).toBe(res.index);

    const byName = await fuzzy(s, { Text: "EDI", Context: "jobs" });
    expect(byName.body.Matches).toEqual({ jobs: [{ ID: "redis", Scope: ["default", "job1"] }] });
    const parts = await fuzzy(s, { Text: "1", Context: "jobs" }).catch(() => undefined);
    expect(parts?.status).toBe(400);
    const group = await fuzzy(s, { Text: "group", Context: "jobs" });
    expect(group.body.Matches.groups).toEqual([{ ID: "group1", Scope: ["default", "job1"] }]);
    const task = await fuzzy(s, { Text: "task", Context: "jobs" });
    expect(task.body.Matches.tasks).toEqual([{ ID: "task1", Scope: ["default", "job1", "group1"] }]);
    const ns = await fuzzy(s, { Text: "fault", Context: "namespaces" });
    expect(ns.body.Matches.namespaces).toEqual([{ ID: "default" }]);
  });

  it("orders matches by where the text starts, then by length, then by name", async () => {
    const s = await start();
    for (const [id, name] of [
      ["a", "my-api"],
      ["b", "api-gateway"],
      ["c", "api"],
      ["d", "rapid"],
      ["e", "API-2"],
    ]) {
      await s.register(apiTestJob(id!, { Name: name }));
    }
    const res = await fuzzy(s, { Text: "api", Context: "jobs" });
    expect(res.body.Matches.jobs!.map((m) => m.ID)).toEqual([
      "api",
      "API-2",
      "api-gateway",
      "rapid",
      "my-api",
    ]);
  });

  it("looks at the first 20 objects only, and says so", async () => {
    const s = await start();
    for (let i = 0; i < 21; i++) await s.register(apiTestJob(`job-${String(i).padStart(2, "0")}`));
    const res = await fuzzy(s, { Text: "redis", Context: "jobs" });
    expect(res.body.Matches.jobs).toHaveLength(20);
    expect(res.body.Truncations.jobs).toBe(true);
  });

  it("matches nodes and allocations by name, with their scopes", async () => {
    const s = await start(1);
    await s.register(apiTestJob("job1"));
    await s.idle();
    const node = s.nodes[0]!;
    const [alloc] = s.allocs("job1");
    const nodes = await fuzzy(s, { Text: node.name.slice(0, 6), Context: "nodes" });
    expect(nodes.body.Matches.nodes).toEqual([{ ID: node.name, Scope: [node.id] }]);
    const allocs = await fuzzy(s, { Text: "group1[", Context: "allocs" });
    expect(allocs.body.Matches.allocs).toEqual([{ ID: alloc!.Name, Scope: ["default", alloc!.ID] }]);
  });

  it("refuses a term shorter than min_term_length, and unknown contexts", async () => {
    const s = await start();
    const short = await fuzzy(s, { Text: "b", Context: "all" });
    expect(short.status).toBe(400);
    expect(short.text).toBe("fuzzy search query must be at least 2 characters, got 1");
    const unknown = await fuzzy(s, { Text: "bin", Context: "groups" });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toMatch(/^context must be one of \[allocs jobs .*got "groups"$/);
  });
});
