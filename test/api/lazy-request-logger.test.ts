import { Writable } from "node:stream";
import type { FastifyBaseLogger } from "fastify";
import Fastify from "fastify";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { lazyChildLogger } from "../../src/api/lazy-request-logger.ts";

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

describe("lazyChildLogger", () => {
  it("writes what its level lets through with the request's bindings, and nothing else", () => {
    const { logger, lines } = capture("info");
    const log = lazyChildLogger(logger as unknown as FastifyBaseLogger, { reqId: "req-7" }, {});
    log.debug({ a: 1 }, "hidden");
    log.trace("hidden too");
    expect(lines).toEqual([]);
    log.info({ a: 2 }, "shown");
    log.error("failed %s", "here");
    expect(lines).toMatchObject([
      { level: 30, reqId: "req-7", a: 2, msg: "shown" },
      { level: 50, reqId: "req-7", msg: "failed here" },
    ]);
    expect(log.level).toBe("info");
    log.child({ component: "exec" }).warn("from a grandchild");
    expect(lines[2]).toMatchObject({
      level: 40,
      reqId: "req-7",
      component: "exec",
      msg: "from a grandchild",
    });
  });

  it("follows its parent's level when it changes, and its own once set", () => {
    const { logger, lines } = capture("warn");
    const log = lazyChildLogger(logger as unknown as FastifyBaseLogger, { reqId: "req-1" }, {});
    log.info("hidden");
    logger.level = "debug";
    log.debug("shown");
    log.level = "error";
    log.warn("hidden again");
    expect(logger.level).toBe("debug");
    expect(lines).toMatchObject([{ level: 20, reqId: "req-1", msg: "shown" }]);
  });

  it("is each request's logger in fastify, and a route's own level still applies", async () => {
    const { logger, lines } = capture("info");
    const app = Fastify({ loggerInstance: logger as FastifyBaseLogger, childLoggerFactory: lazyChildLogger });
    app.get("/quiet", async (request) => {
      request.log.debug("not written");
      request.log.info({ route: "quiet" }, "written");
      return { ok: true };
    });
    app.get("/verbose", { logLevel: "debug" }, async (request) => {
      request.log.debug({ route: "verbose" }, "written at debug");
      return { ok: true };
    });
    try {
      expect((await app.inject({ url: "/quiet" })).statusCode).toBe(200);
      expect((await app.inject({ url: "/verbose" })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
    const mine = lines.filter((l) => l.route !== undefined);
    expect(mine).toMatchObject([
      { level: 30, route: "quiet", msg: "written", reqId: expect.any(String) },
      { level: 20, route: "verbose", msg: "written at debug", reqId: expect.any(String) },
    ]);
  });
});
