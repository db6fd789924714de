import { Agent, request } from "node:http";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { drainHttp } from "../../src/shutdown/drain-http.ts";

function get(agent: Agent, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

async function app(handlerMs: number) {
  const a = Fastify();
  a.get("/quick", async () => "ok");
  a.get("/slow", () => new Promise((r) => setTimeout(() => r("late"), handlerMs)));
  await a.listen({ host: "127.0.0.1", port: 0 });
  const { port } = a.server.address() as { port: number };
  return { a, url: `http://127.0.0.1:${port}` };
}

describe("drainHttp", () => {
  it("closes idle keep-alive connections at once instead of waiting out their timeout", async () => {
    const { a, url } = await app(0);
    const agent = new Agent({ keepAlive: true });
    expect(await get(agent, `${url}/quick`)).toBe(200);
    const t0 = performance.now();
    expect(await drainHttp(a, 10_000)).toEqual({ cut: false });
    expect(performance.now() - t0).toBeLessThan(5_000);
    agent.destroy();
  });

  it("lets a request in flight finish within the grace", async () => {
    const { a, url } = await app(200);
    const agent = new Agent({ keepAlive: true });
    const answer = get(agent, `${url}/slow`);
    await new Promise((r) => setTimeout(r, 50));
    expect(await drainHttp(a, 10_000)).toEqual({ cut: false });
    expect(await answer).toBe(200);
    agent.destroy();
  });

  it("cuts what still runs when the grace is over", async () => {
    const { a, url } = await app(60_000);
    const agent = new Agent({ keepAlive: true });
    const answer = get(agent, `${url}/slow`).catch((err: Error) => err);
    await new Promise((r) => setTimeout(r, 50));
    expect(await drainHttp(a, 300)).toEqual({ cut: true });
    expect(await answer).toBeInstanceOf(Error);
    agent.destroy();
  });
});
