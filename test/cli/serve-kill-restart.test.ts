import { describe, expect, it } from "vitest";
import type { TestNode } from "../api/node-fixtures.ts";
import { useTempDirs } from "../store/helpers.ts";
import {
  clientNode,
  clusterCensus,
  heartbeatLoop,
  registerReadyNode,
  runJob,
  type Target,
} from "./cluster-client.ts";
import { spawnServe } from "./serve-process.ts";
import { signalAndTime } from "./timed-exit.ts";

// Regular TTLs of 1-2 s + 1 s grace: the server is down for longer than
// that, so any node it re-armed with a regular TTL would go down. The
// failover TTL stays at its 5 min default.
const FLAGS = ["--min-heartbeat-ttl", "1s", "--heartbeat-grace", "1s", "--fsync", "never"];

describe("chronomad serve killed and restarted", () => {
  const tempDir = useTempDirs();

  it("marks no node down and replaces no allocation when restarted within the failover TTL", async () => {
    const dir = await tempDir();
    const target: Target = { url: "" };
    let server = await spawnServe(["--data-dir", dir, ...FLAGS]);
    target.url = server.url;
    const nodes: TestNode[] = [];
    const beats = heartbeatLoop(nodes);
    try {
      for (let i = 0; i < 3; i++) {
        const node = clientNode(target);
        await registerReadyNode(node);
        nodes.push(node);
      }
      for (let i = 0; i < 4; i++) await runJob(target, nodes, `web-${i}`);
      const before = await clusterCensus(target);
      expect(before.nodes.every((n) => n.endsWith(" ready"))).toBe(true);
      expect(before.allocs).toHaveLength(4);

      await signalAndTime(server, 5_000, "SIGKILL");
      // Silent for several regular TTLs while it is down.
      await new Promise((r) => setTimeout(r, 3_000));
      server = await spawnServe(["--data-dir", dir, ...FLAGS]);
      target.url = server.url;
      expect(await clusterCensus(target)).toEqual(before);
      // Heartbeats resume; a few more regular TTLs pass.
      await new Promise((r) => setTimeout(r, 4_000));
      expect(await clusterCensus(target)).toEqual(before);
    } finally {
      await beats.stop();
      await signalAndTime(server, 10_000);
    }
  }, 120_000);
});
