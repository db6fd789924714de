import { Writable } from "node:stream";
import Fastify, { type FastifyBaseLogger, LogController } from "fastify";
import { pino } from "pino";
import { describe, expect, it, vi } from "vitest";
import { LazyRequestLogger, lazyRequestLoggers } from "../../src/api/lazy-request-logger.ts";

function capture(level = "info") {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line !== "") lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

describe("LazyRequestLogger", () => {
  it("makes its pino child only when something is logged, with the request's bindings", () => {
    const { logger, lines } = capture();
    const child = vi.spyOn(logger, "child");
    const lazy = new LazyRequestLogger(logger as FastifyBaseLogger, { reqId: "req-7" }, {});
    expect(lazy.level).toBe("info");
    lazy.debug("not logged at info");
    expect(child).toHaveBeenCalledTimes(1);
    lazy.error({ url: "/x" }, "request failed");
    lazy.info("again");
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toMatchObject([
      { level: 50, reqId: "req-7", url: "/x", msg: "request failed" },
      { level: 30, reqId: "req-7", msg: "again" },
    ]);
  });

  it("makes no child for a request that logs nothing", () => {
    const { logger } = capture();
    const child = vi.spyOn(logger, "child");
    new LazyRequestLogger(logger as FastifyBaseLogger, { reqId: "req-1" }, {});
    expect(child).not.toHaveBeenCalled();
  });

  it("keeps a route's own log level", () => {
    const { logger, lines } = capture("info");
    const lazy = new LazyRequestLogger(logger as FastifyBaseLogger, { reqId: "req-2" }, { level: "debug" });
    expect(lazy.level).toBe("debug");
    lazy.debug("seen at the route's level");
    expect(lines).toMatchObject([{ level: 20, reqId: "req-2", msg: "seen at the route's level" }]);
  });

  it("through fastify's own child factory, logs a request's lines with its request id", async () => {
    const { logger, lines } = capture();
    const app = Fastify({
      loggerInstance: lazyRequestLoggers(logger as FastifyBaseLogger),
      logController: new LogController({ disableRequestLogging: true }),
    });
    app.get("/quiet", async () => "ok");
    app.get("/loud", async (request) => {
      request.log.warn({ what: "loud" }, "logged");
      return "ok";
    });
    expect((await app.inject("/quiet")).body).toBe("ok");
    expect((await app.inject("/loud")).body).toBe("ok");
    await app.close();
    expect(lines).toMatchObject([{ level: 40, reqId: "req-2", what: "loud", msg: "logged" }]);
  });
});
