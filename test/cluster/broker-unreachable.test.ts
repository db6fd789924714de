import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SHUTDOWN_MARGIN_MS } from "../../src/shutdown/shutdown-sequence.ts";
import { spawnServe } from "../cli/serve-process.ts";
import { signalAndTime, tail } from "../cli/timed-exit.ts";
import { useClusterTopics } from "./cluster-fixture.ts";
import { KafkaProxy } from "./kafka-proxy.ts";

const brokers = process.env.KAFKA_BROKERS;
const GRACE_MS = 2_000;

if (!brokers) {
  console.warn(
    "Unreachable-broker shutdown test skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)",
  );
  describe.skip("shutdown with the Kafka broker unreachable — skipped: KAFKA_BROKERS is not set (bash .ci/run starts a broker)", () => {
    it("needs a real broker", () => undefined);
  });
} else {
  const topics = useClusterTopics(brokers);

  describe("shutdown with the Kafka broker unreachable", () => {
    it("ends by the hard deadline, with an error naming the unreachable broker", async () => {
      const topic = `chronomad-unreachable-${randomUUID()}`;
      topics.push(topic);
      const proxy = await KafkaProxy.start(brokers.split(",")[0]!);
      const dir = await mkdtemp(join(tmpdir(), "chronomad-unreachable-"));
      const server = await spawnServe(
        [
          "--log",
          `kafka://${proxy.address}/${topic}`,
          "--data-dir",
          dir,
          "--shutdown-grace",
          `${GRACE_MS}ms`,
        ],
        { CHRONOMAD_LOG_LEVEL: "info" },
      );
      try {
        const ok = await fetch(`${server.url}/v1/namespace/before`, { method: "PUT", body: "{}" });
        expect(ok.status).toBe(200);

        await proxy.close();
        // A write now waits on the log, and holds its connection open.
        const stuck = fetch(`${server.url}/v1/namespace/after`, { method: "PUT", body: "{}" }).catch(
          (err: Error) => err,
        );
        await new Promise((r) => setTimeout(r, 1_000));
        const deadline = GRACE_MS + SHUTDOWN_MARGIN_MS;
        const exit = await signalAndTime(server, deadline + 2_000);
        expect(exit.code, tail(server, 30)).not.toBe("hung");
        expect(exit.ms).toBeLessThan(deadline + 2_000);
        // The shutdown's own error says which step hung and on which log (the broker's address in it).
        const errors = server.lines.filter(
          (l) => typeof l.level === "number" && l.level >= 50 && /shutdown/.test(String(l.msg)),
        );
        expect(
          errors.some((l) => String(l.log).includes(proxy.address)),
          `no shutdown error names ${proxy.address}:\n${tail(server, 30)}`,
        ).toBe(true);
        await stuck;
      } finally {
        server.child.kill("SIGKILL");
        await server.exited;
        await rm(dir, { recursive: true, force: true });
      }
    }, 120_000);
  });
}
