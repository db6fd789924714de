import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./server-harness.ts";

describe("server", () => {
  const running: TestServer[] = [];
  const start = async (...args: Parameters<typeof startTestServer>) => {
    const s = await startTestServer(...args);
    running.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
  });

  it("serves the leader, health and the default namespace of a freshly bootstrapped cluster", async () => {
    const s = await start();
    const leader = await s.call("/v1/status/leader");
    expect(leader.status).toBe(200);
    expect(await leader.json()).toBe(s.address);
    expect(await (await s.call("/v1/status/peers")).json()).toEqual([s.address]);
    const health = await s.call("/v1/agent/health");
    expect(await health.json()).toEqual({ server: { ok: true, message: "ok" } });
    const list = await s.call("/v1/namespaces");
    expect(list.headers.get("x-nomad-index")).toBe("1");
    expect(list.headers.get("x-nomad-knownleader")).toBe("true");
    expect(list.headers.get("x-nomad-lastcontact")).toBe("0");
    expect(((await list.json()) as { Name: string }[]).map((n: { Name: string }) => n.Name)).toEqual([
      "default",
    ]);
  });

  it("writes through the log and answers with the applied index", async () => {
    const s = await start();
    const before = s.log.lastIndex();
    const put = await s.call("/v1/namespace/web", {
      method: "PUT",
      body: JSON.stringify({ Name: "web", Description: "front", Meta: { team: "edge" } }),
    });
    expect(put.status).toBe(200);
    const index = Number(put.headers.get("x-nomad-index"));
    expect(index).toBe(before + 1);
    const got = await s.call("/v1/namespace/web");
    expect(await got.json()).toMatchObject({
      Name: "web",
      Description: "front",
      CreateIndex: index,
      ModifyIndex: index,
    });
    const del = await s.call("/v1/namespace/web", { method: "DELETE" });
    expect(del.status).toBe(200);
    expect((await s.call("/v1/namespace/web")).status).toBe(404);
  });

  it("refuses bad input with a 400 naming the problem, and writes nothing", async () => {
    const s = await start();
    const before = s.log.lastIndex();
    const cases: [RequestInit, RegExp][] = [
      [{ method: "PUT", body: "{not json" }, /invalid JSON body/],
      [
        { method: "PUT", body: JSON.stringify({ Name: "web", Description: 5 }) },
        /body\.Description must be string/,
      ],
      [{ method: "PUT", body: JSON.stringify({ Name: "other" }) }, /does not match request path/],
    ];
    for (const [init, message] of cases) {
      const res = await s.call("/v1/namespace/web", {
        ...init,
        headers: { "content-type": "application/json" },
      });
      expect(res.status).toBe(400);
      expect(await res.text()).toMatch(message);
    }
    const bad = await s.call("/v1/namespace/no%20spaces", { method: "PUT", body: "{}" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/invalid name/);
    expect((await s.call("/v1/namespace/default", { method: "DELETE" })).status).toBe(400);
    expect((await s.call("/v1/namespace/ghost", { method: "DELETE" })).status).toBe(404);
    expect((await s.call("/v1/namespaces?index=abc")).status).toBe(400);
    expect((await s.call("/v1/namespaces?index=1&wait=soon")).status).toBe(400);
    expect((await s.call("/v1/nowhere")).status).toBe(404);
    expect(s.log.lastIndex()).toBe(before);
  });

  it("ignores body fields it does not know, as Nomad's decoder does, and stores none of them", async () => {
    const s = await start();
    const res = await s.call("/v1/namespace/web", {
      method: "PUT",
      body: JSON.stringify({ Name: "web", Description: "front", FromANewerNomad: { Deep: [1] } }),
    });
    expect(res.status).toBe(200);
    const ns = (await (await s.call("/v1/namespace/web")).json()) as Record<string, unknown>;
    expect(ns.Description).toBe("front");
    expect(ns).not.toHaveProperty("FromANewerNomad");
  });

  it("refuses bodies nested deeper than any Nomad struct, and writes nothing", async () => {
    const s = await start();
    const before = s.log.lastIndex();
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const res = await s.call("/v1/namespace/web", { method: "PUT", body: deep });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/nests deeper than 128 levels/);
    const big = await s.call("/v1/namespace/web", {
      method: "PUT",
      body: JSON.stringify({ Name: "web", Description: "x".repeat(2 * 1024 * 1024) }),
    });
    expect(big.status).toBe(413);
    expect(s.log.lastIndex()).toBe(before);
    expect((await s.call("/v1/status/leader")).status).toBe(200);
  });

  it("holds a blocking query until the table changes, and no longer", async () => {
    const s = await start();
    const index = Number((await s.call("/v1/namespaces")).headers.get("x-nomad-index"));
    let answered = false;
    const blocked = s.call(`/v1/namespaces?index=${index}&wait=30s`).then(async (r) => {
      answered = true;
      return { index: Number(r.headers.get("x-nomad-index")), body: (await r.json()) as { Name: string }[] };
    });
    // A write to the log that does not touch namespaces leaves it waiting.
    await new Promise((r) => setTimeout(r, 100));
    expect(answered).toBe(false);
    await s.call("/v1/namespace/api", { method: "PUT", body: "{}" });
    const result = await blocked;
    expect(result.index).toBeGreaterThan(index);
    expect(result.body.map((n: { Name: string }) => n.Name)).toEqual(["api", "default"]);
  });

  it("ends a blocking query at its wait time with the unchanged index", async () => {
    const s = await start();
    const index = Number((await s.call("/v1/namespaces")).headers.get("x-nomad-index"));
    const res = await s.call(`/v1/namespaces?index=${index}&wait=50ms`);
    expect(res.status).toBe(200);
    expect(Number(res.headers.get("x-nomad-index"))).toBe(index);
  });

  it("asks clients to hang up on answers sent while closing, so a kept-alive connection cannot hold the close", async () => {
    const s = await startTestServer();
    const index = Number((await s.call("/v1/namespaces")).headers.get("x-nomad-index"));
    // fastify has routed the request once the server's own 'request' listener ran.
    const arrived = new Promise((resolve) => s.http.server.once("request", resolve));
    const waiting = s.call(`/v1/namespaces?index=${index}&wait=60s`);
    await arrived;
    await s.stop();
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.headers.get("connection")).toBe("close");
    await expect(s.call("/v1/namespaces")).rejects.toThrow();
  });

  it("serves metrics as JSON and as Prometheus text", async () => {
    const s = await start();
    const json = (await (await s.call("/v1/metrics")).json()) as { Gauges: { Name: string }[] };
    expect(json.Gauges.map((g: { Name: string }) => g.Name)).toContain("chronomad.store.applied_index");
    const prom = await s.call("/v1/metrics?format=prometheus");
    expect(prom.headers.get("content-type")).toMatch(/text\/plain/);
    expect(await prom.text()).toMatch(/^chronomad_store_applied_index \d+$/m);
    expect((await s.call("/v1/metrics?format=xml")).status).toBe(400);
  });

  it("restarts on its data dir with the same state", async () => {
    const first = await startTestServer({ keepDir: true });
    await first.call("/v1/namespace/keep", { method: "PUT", body: "{}" });
    const hash = first.store.hash();
    const last = first.log.lastIndex();
    await first.close();
    const again = await start({ dataDir: first.dataDir });
    expect(again.store.hash()).toBe(hash);
    expect(again.log.lastIndex()).toBe(last);
    expect((await again.call("/v1/namespace/keep")).status).toBe(200);
  });
});
