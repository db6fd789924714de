import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

const URL = "/v1/operator/scheduler/configuration";

describe("/v1/operator/scheduler/configuration", () => {
  const running: TestServer[] = [];
  const start = async () => {
    const s = await startTestServer();
    running.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
  });

  const put = (s: TestServer, body: unknown, query = "") =>
    s.call(`${URL}${query}`, { method: "PUT", body: JSON.stringify(body) });

  it("answers Nomad's defaults before anything was set", async () => {
    const s = await start();
    const res = await s.call(URL);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-nomad-index")).toBe("1");
    expect(await res.json()).toEqual({
      SchedulerConfig: {
        SchedulerAlgorithm: "binpack",
        PreemptionConfig: {
          SystemSchedulerEnabled: true,
          SysBatchSchedulerEnabled: false,
          BatchSchedulerEnabled: false,
          ServiceSchedulerEnabled: false,
        },
        MemoryOversubscriptionEnabled: false,
        RejectJobRegistration: false,
        PauseEvalBroker: false,
        NodeLimitForFeasibilityChecks: 0,
        CreateIndex: 0,
        ModifyIndex: 0,
      },
      Index: 1,
      LastContact: 0,
      KnownLeader: true,
      NextToken: "",
    });
  });

  it("replaces the configuration, with fields left out taking Go's zero values", async () => {
    const s = await start();
    const res = await put(s, {
      SchedulerAlgorithm: "spread",
      PauseEvalBroker: true,
      NodeLimitForFeasibilityChecks: 123,
    });
    expect(res.status).toBe(200);
    const { Updated, Index } = (await res.json()) as { Updated: boolean; Index: number };
    expect(Updated).toBe(true);
    expect(res.headers.get("x-nomad-index")).toBe(String(Index));
    const got = (await (await s.call(URL)).json()) as { SchedulerConfig: unknown; Index: number };
    expect(got.Index).toBe(Index);
    expect(got.SchedulerConfig).toEqual({
      SchedulerAlgorithm: "spread",
      PreemptionConfig: {
        SystemSchedulerEnabled: false,
        SysBatchSchedulerEnabled: false,
        BatchSchedulerEnabled: false,
        ServiceSchedulerEnabled: false,
      },
      MemoryOversubscriptionEnabled: false,
      RejectJobRegistration: false,
      PauseEvalBroker: true,
      NodeLimitForFeasibilityChecks: 123,
      CreateIndex: Index,
      ModifyIndex: Index,
    });
    // The writer is recorded: the envelope's `by` is the audit trail.
    const again = await put(s, { PauseEvalBroker: false }, "");
    const second = ((await again.json()) as { Index: number }).Index;
    const config = s.store
      .table<{ CreateIndex: number; ModifyIndex: number }>("scheduler_config")
      .get("config");
    expect(config).toMatchObject({ CreateIndex: Index, ModifyIndex: second });
  });

  it("checks and sets with ?cas: a stale index is refused without writing anything", async () => {
    const s = await start();
    const first = (await (await put(s, { PauseEvalBroker: true }, "?cas=0")).json()) as {
      Updated: boolean;
      Index: number;
    };
    expect(first.Updated).toBe(true);
    const before = s.log.lastIndex();
    const stale = await put(s, { PauseEvalBroker: false }, "?cas=0");
    expect(stale.status).toBe(200);
    expect(await stale.json()).toEqual({ Updated: false, Index: first.Index });
    expect(s.log.lastIndex()).toBe(before);
    const fresh = (await (await put(s, { PauseEvalBroker: false }, `?cas=${first.Index}`)).json()) as {
      Updated: boolean;
    };
    expect(fresh.Updated).toBe(true);
  });

  it("lets only one of two racing CAS writes win, decided at apply", async () => {
    const s = await start();
    const answers = await Promise.all(
      [true, false].map(async (pause) => (await put(s, { PauseEvalBroker: pause }, "?cas=0")).json()),
    );
    const updated = (answers as { Updated: boolean }[]).map((a) => a.Updated).sort();
    expect(updated).toEqual([false, true]);
  });

  it("refuses bad input with a 400 naming it, and writes nothing", async () => {
    const s = await start();
    const before = s.log.lastIndex();
    const cases: [string, unknown, RegExp][] = [
      ["", { SchedulerAlgorithm: "roundrobin" }, /invalid scheduler algorithm: roundrobin/],
      ["", { PauseEvalBroker: "yes" }, /body\.PauseEvalBroker must be boolean/],
      ["?cas=abc", {}, /Error parsing cas value: strconv\.ParseUint: parsing "abc": invalid syntax/],
      ["?cas=", {}, /Error parsing cas value/],
    ];
    for (const [query, body, message] of cases) {
      const res = await put(s, body, query);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.text()).toMatch(message);
    }
    const empty = await s.call(URL, { method: "PUT" });
    expect(empty.status).toBe(400);
    expect(s.log.lastIndex()).toBe(before);
  });
});
