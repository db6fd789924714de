import { afterEach, describe, expect, it } from "vitest";
import { Scenario } from "../../services/scheduler/scenario.ts";

const scenarios: Scenario[] = [];
async function start() {
  const s = await Scenario.start();
  scenarios.push(s);
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

const put = (s: Scenario, body: unknown) => s.call("/v1/agent/schedulers/config", "PUT", body);

describe("/v1/agent/schedulers", () => {
  it("reports the leader's workers and their configuration in Nomad's shape", async () => {
    const s = await start();
    const config = await s.call("/v1/agent/schedulers/config");
    expect(config.status).toBe(200);
    expect(config.body).toEqual({
      server_id: expect.any(String),
      num_schedulers: 4,
      enabled_schedulers: ["service", "batch", "system", "sysbatch", "_core"],
    });
    const info = (await s.call("/v1/agent/schedulers")).body as {
      server_id: string;
      schedulers: Record<string, unknown>[];
    };
    expect(info.schedulers).toHaveLength(4);
    expect(info.schedulers[0]).toEqual({
      id: expect.any(String),
      enabled_schedulers: ["service", "batch", "system", "sysbatch", "_core"],
      started: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      status: "Started",
      workload_status: "WaitingToDequeue",
    });
  });

  it("resizes the pool: with no workers evaluations wait, with one again they are scheduled", async () => {
    const s = await start();
    const none = await put(s, { num_schedulers: 0, enabled_schedulers: ["_core", "service"] });
    expect(none.status, none.text).toBe(200);
    expect(none.body).toMatchObject({ num_schedulers: 0, enabled_schedulers: ["_core", "service"] });
    expect(((await s.call("/v1/agent/schedulers")).body as { schedulers: unknown[] }).schedulers).toEqual([]);

    const { EvalID } = await s.register({
      ID: "web",
      TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "docker" }] }],
    });
    // Applied and brokered, and nobody takes it.
    for (let i = 0; i < 20 && s.scheduler.evalBroker?.stats().ready !== 1; i++) {
      await new Promise((r) => setImmediate(r));
    }
    expect(s.scheduler.evalBroker?.stats()).toMatchObject({ ready: 1, unacked: 0 });
    expect((await s.call(`/v1/evaluation/${EvalID}`)).body).toMatchObject({ Status: "pending" });

    const one = await put(s, { num_schedulers: 1, enabled_schedulers: ["service", "_core"], server_id: "x" });
    expect(one.body).toMatchObject({ num_schedulers: 1 });
    await s.idle();
    expect((await s.call(`/v1/evaluation/${EvalID}`)).body).toMatchObject({ Status: "complete" });
  });

  it("refuses an invalid pool with Nomad's text and keeps the one in force", async () => {
    const s = await start();
    for (const body of [
      { num_schedulers: -1, enabled_schedulers: ["_core", "system"] },
      { num_schedulers: 2, enabled_schedulers: ["system"] },
      { num_schedulers: 2, enabled_schedulers: ["_core", "nope"] },
    ]) {
      const res = await put(s, body);
      expect(res.status).toBe(400);
      expect(res.text).toBe("Invalid request");
    }
    const huge = await put(s, { num_schedulers: 1_000_000, enabled_schedulers: ["_core"] });
    expect(huge.status).toBe(400);
    expect(huge.text).toMatch(/^Invalid request: num_schedulers is 1000000, more than the 256/);
    const wrong = await put(s, { num_schedulers: "two" });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toMatch(/^Invalid request: /);
    expect(
      ((await s.call("/v1/agent/schedulers/config")).body as { num_schedulers: number }).num_schedulers,
    ).toBe(4);
  });
});
