import { describe, expect, it } from "vitest";
import { hclogLine, monitorLevel } from "../../src/logging/hclog-lines.ts";

const line = (record: Record<string, unknown>) =>
  JSON.stringify({ level: 20, time: Date.UTC(2023, 7, 1, 10, 0, 0), pid: 1, hostname: "h", ...record });

describe("hclog lines", () => {
  it("reads levels as hclog's LevelFromString", () => {
    expect(monitorLevel("DEBUG")).toBe(20);
    expect(monitorLevel(" warn ")).toBe(40);
    expect(monitorLevel("off")).toBe(Number.POSITIVE_INFINITY);
    expect(monitorLevel("verbose")).toBeUndefined();
  });

  it("formats a pino line as hclog text, with the component as the module", () => {
    const text = hclogLine(
      line({ name: "chronomad", component: "http", msg: "request", url: "/v1/jobs", status: 200 }),
      false,
    );
    expect(text).toBe("2023-08-01T10:00:00.000Z [DEBUG] http: request: url=/v1/jobs status=200\n");
  });

  it("quotes values with spaces and shows an error's message", () => {
    const text = hclogLine(
      line({ level: 50, msg: "failed", err: { type: "Error", message: "no space left", stack: "..." } }),
      false,
    );
    expect(text).toBe('2023-08-01T10:00:00.000Z [ERROR] chronomad: failed: err="no space left"\n');
  });

  it("formats hclog JSON", () => {
    const json = JSON.parse(
      hclogLine(line({ level: 30, component: "store", msg: "applied", index: 7 }), true),
    );
    expect(json).toEqual({
      "@level": "info",
      "@message": "applied",
      "@module": "store",
      "@timestamp": "2023-08-01T10:00:00.000Z",
      index: 7,
    });
  });
});
