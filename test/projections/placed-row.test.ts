import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { Scenario } from "../services/scheduler/scenario.ts";

const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`../fixtures/jobs/${name}`, import.meta.url), "utf8"));

let s: Scenario | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

describe("a compact placement's row", () => {
  it("shares one frozen empty DesiredTransition, copied when a transition is set", async () => {
    s = await Scenario.start();
    for (const dc of ["us-east1", "us-east1", "us-west1", "us-west1"]) await s.addNode({ Datacenter: dc });
    const job = fixture("spread-datacenters-50-50.json");
    await s.register(job);
    await s.idle();
    const live = s.live(job.ID as string);
    expect(live.length).toBe(10);
    const first = live[0]!.DesiredTransition;
    expect(first).toEqual({});
    expect(Object.isFrozen(first)).toBe(true);
    for (const a of live) expect(a.DesiredTransition).toBe(first);
    const res = await s.call(`/v1/allocation/${live[0]!.ID}/stop`, "POST");
    expect(res.status, res.text).toBe(200);
    await s.idle();
    const marked = s.server.store.table<(typeof live)[number]>("allocs").get(live[0]!.ID)!;
    expect(marked.DesiredTransition.Migrate).toBe(true);
    expect(first).toEqual({});
  });
});
