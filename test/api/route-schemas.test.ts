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
    let compiled!: () => void;
    const done = new Promise<void>((resolve) => {
      compiled = resolve;
    });
    const sink = new Writable({
      write(chunk, _encoding, next) {
        const line = JSON.parse(String(chunk)) as LogLine;
        lines.push(line);
        if (line.msg === "route schemas compiled") compiled();
        next();
      },
    });
    // At debug level, so that the body schemas' reports of dropped fields compile too.
    const server = await startTestServer({ deps: { logger: pino({ level: "debug" }, sink) } });
    try {
      await done;
    } finally {
      await server.stop();
    }
    expect(lines.filter((l) => l.msg === "a route's schema does not compile")).toEqual([]);
    const schemas = lines.find((l) => l.msg === "route schemas compiled")?.schemas;
    // 104 distinct query-string, path and body schemas today, and the bodies once more for their reports.
    expect(schemas).toBeGreaterThan(100);
  }, 60_000);
});
