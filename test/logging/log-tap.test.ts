import { describe, expect, it } from "vitest";
import { LogTap } from "../../src/logging/log-tap.ts";

/** A destination that keeps what it is given. */
function collector() {
  const lines: string[] = [];
  return { lines, write: (line: string) => void lines.push(line) };
}

const messages = (lines: readonly string[]) => lines.map((l) => (JSON.parse(l) as { msg: string }).msg);

describe("LogTap", () => {
  it("writes what the configured level allows, and nothing more, while nobody listens", () => {
    const out = collector();
    const tap = new LogTap("info", {}, out);
    tap.logger.debug("hidden");
    tap.logger.info("shown");
    expect(messages(out.lines)).toEqual(["shown"]);
    expect(tap.logger.isLevelEnabled("debug")).toBe(false);
  });

  it("hands a listener lines below the configured level without writing them, children included", () => {
    const out = collector();
    const tap = new LogTap("warn", {}, out);
    // Made before the listener: children follow the root's level.
    const child = tap.logger.child({ component: "http" });
    const heard: string[] = [];
    const stop = tap.listen(20, (_level, line) => heard.push(line));
    child.debug("request");
    tap.logger.trace("too fine");
    child.error("broken");
    expect(messages(heard)).toEqual(["request", "broken"]);
    expect(messages(out.lines)).toEqual(["broken"]);

    stop();
    // Back to the configured level: debug calls are no-ops again.
    expect(child.isLevelEnabled("debug")).toBe(false);
    child.debug("after");
    expect(messages(heard)).toEqual(["request", "broken"]);
  });

  it("keeps the lowest level any listener asked for until the last one leaves", () => {
    const tap = new LogTap("silent", {}, collector());
    const stopDebug = tap.listen(20, () => undefined);
    const stopError = tap.listen(50, () => undefined);
    expect(tap.logger.level).toBe("debug");
    stopDebug();
    expect(tap.logger.level).toBe("error");
    stopError();
    expect(tap.logger.level).toBe("silent");
  });

  it("does not let a failing listener reach the code that logged", () => {
    const out = collector();
    const tap = new LogTap("info", {}, out);
    tap.listen(30, () => {
      throw new Error("monitor gone");
    });
    expect(() => tap.logger.info("still logged")).not.toThrow();
    expect(messages(out.lines)).toEqual(["still logged"]);
  });
});
