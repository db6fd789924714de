import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { startTestServer } from "../server-harness.ts";

interface LogLine {
  readonly msg?: string;
  readonly schemas?: number;
}

describe("route schemas", () => {
  it("all compile in the turns after the server is ready, with no request needing them", async () => {
    const lines: LogLine[] = [];
    const sink = new Writable({
      write(chunk, _encoding, next) {
        lines.push(JSON.parse(String(chunk)) as LogLine);
        next();
      },
    });
    // At debug level, so that the body schemas' reports of dropped fields compile too.
    const server = await startTestServer({ deps: { logger: pino({ level: "debug" }, sink) } });
    try {
      await server.http.routeSchemasCompiled;
    } finally {
      await server.stop();
    }
    expect(lines.filter((l) => l.msg === "a route's schema does not compile")).toEqual([]);
    const schemas = lines.find((l) => l.msg === "route schemas compiled")?.schemas;
    // 104 distinct query-string, path and body schemas today, and the bodies once more for their reports.
    expect(schemas).toBeGreaterThan(100);
  }, 60_000);
});
