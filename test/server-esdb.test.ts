import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { eventually } from "./cluster/eventually.ts";
import { startTestServer, type TestServer } from "./server-harness.ts";

const esdbUrl = process.env.ESDB_URL;

if (!esdbUrl) {
  process.stderr.write("servers on EventStoreDB skipped: ESDB_URL is not set\n");
  describe.skip("servers on an EventStoreDB log — skipped: ESDB_URL is not set", () => {
    it("needs a real EventStoreDB server", () => undefined);
  });
} else {
  describe("servers on an EventStoreDB log", () => {
    const running: TestServer[] = [];
    afterEach(async () => {
      for (const s of running.splice(0)) await s.stop();
    });
    const freshLog = () =>
      `${esdbUrl}${esdbUrl.includes("?") ? "&" : "?"}stream=chronomad-server-${randomUUID()}`;
    const start = async (log: string, name: string) => {
      const server = await startTestServer({ args: ["--log", log, "--server-name", name] });
      running.push(server);
      return server;
    };
    const put = (server: TestServer, namespace: string) =>
      server.call(`/v1/namespace/${namespace}`, { method: "PUT", body: "{}" });

    it("keeps what it wrote across a restart, rebuilt from the stream into a fresh data dir", async () => {
      const log = freshLog();
      const first = await start(log, "one");
      expect((await put(first, "kept")).status).toBe(200);
      const index = first.store.appliedIndex;
      await first.stop();
      running.splice(0);
      const again = await start(log, "one");
      expect(again.store.appliedIndex).toBeGreaterThanOrEqual(index);
      expect((await again.call("/v1/namespace/kept")).status).toBe(200);
      expect((await put(again, "after")).status).toBe(200);
    });

    it("elects one of two servers on one stream; both take writes, and each applies the other's", async () => {
      const log = freshLog();
      const a = await start(log, "a");
      expect((await put(a, "from-a")).status).toBe(200);
      await a.store.caughtUp();
      // b opens at the stream's end; its append lands after a's, and a's next after b's.
      const b = await start(log, "b");
      expect(a.leadership.isLeader()).toBe(true);
      expect(b.leadership.isLeader()).toBe(false);
      expect(b.leadership.leaderAddress()).toBe(a.leadership.leaderAddress());
      expect((await put(b, "from-b")).status).toBe(200);
      expect((await put(a, "from-a-again")).status).toBe(200);
      for (const server of [a, b]) {
        for (const name of ["from-a", "from-b", "from-a-again"]) {
          await eventually(async () => expect((await server.call(`/v1/namespace/${name}`)).status).toBe(200));
        }
      }
    });
  });
}
