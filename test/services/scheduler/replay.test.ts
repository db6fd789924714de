import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createProjections } from "../../../projections/index.ts";
import { EnvelopeCodec } from "../../../src/codec/envelope-codec.ts";
import { Store } from "../../../src/store/store.ts";
import { allSchemas } from "../../../streams/index.ts";
import { Scenario, serviceJob } from "./scenario.ts";

const HOUR_NS = 3_600_000_000_000;
const HEALTHY = { DeploymentStatus: { Healthy: true, Timestamp: "2025-11-22T08:00:00Z" } };

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

describe("replay", () => {
  it("rebuilds identical tables from the whole scenario log in a fresh store", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    for (let i = 0; i < 4; i++) await s.addNode();
    await s.register(serviceJob("web", 3, {}, { MaxClientDisconnect: HOUR_NS }));
    await s.register({
      ID: "agent",
      Type: "system",
      TaskGroups: [
        { Name: "a", Tasks: [{ Name: "a", Driver: "exec", Resources: { CPU: 100, MemoryMB: 64 } }] },
      ],
    });
    await s.register({
      ID: "etl",
      Type: "batch",
      TaskGroups: [
        {
          Name: "b",
          Count: 2,
          Tasks: [{ Name: "b", Driver: "exec", Resources: { CPU: 100, MemoryMB: 64 } }],
        },
      ],
    });
    await s.idle();
    await s.report(s.allocs("web"), "running", HEALTHY);
    await s.report(s.allocs("etl"), "complete");
    await s.report(s.allocs("agent"), "running");

    // A disconnect, a replacement, a reconnect.
    const a1 = s.allocs("web")[0]!;
    const away = s.nodes.find((n) => n.id === a1.NodeID)!;
    s.silent.add(away.id);
    await s.advance(35_000);
    await away.heartbeat();
    await s.updateAllocs(away, [a1], "running");
    s.silent.delete(away.id);
    await s.advance(10_000);
    // A new version, a scale-up, a drain.
    await s.register(serviceJob("web", 4, {}, { MaxClientDisconnect: HOUR_NS, Meta: { v: "2" } }));
    await s.idle();
    await s.report(
      s.live("web").filter((a) => a.ClientStatus === "pending"),
      "running",
      HEALTHY,
    );
    await s.call(`/v1/node/${s.nodes[1]!.id}/drain`, "PUT", { DrainSpec: { Deadline: -1 } });
    await s.advance(30_000);
    const deregistered = await s.call("/v1/job/etl?purge=true", "DELETE");
    expect(deregistered.status).toBe(200);
    await s.idle();
    expect(s.server.log.lastIndex()).toBeGreaterThan(50);

    const live = s.server.store.hash();
    const fresh = new Store({
      log: s.server.log,
      codec: new EnvelopeCodec(allSchemas),
      projections: createProjections().all,
      logger: pino({ level: "silent" }),
    });
    await fresh.start();
    await fresh.caughtUp();
    expect(fresh.appliedIndex).toBe(s.server.store.appliedIndex);
    expect(fresh.hash()).toBe(live);
    await fresh.stop();
  });
});
