import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { boundedStep, type ShutdownProgress } from "../../src/shutdown/bounded-step.ts";

const logger = pino({ level: "silent" });

describe("boundedStep", () => {
  it("records the step it is on and reports whether it finished in time", async () => {
    const progress: ShutdownProgress = { step: "starting", startedAt: Date.now() };
    expect(await boundedStep(logger, progress, "quick", 1_000, async () => undefined)).toBe(true);
    expect(progress.step).toBe("quick");
    const hanging = new Promise<void>(() => undefined);
    expect(await boundedStep(logger, progress, "hangs", 50, () => hanging)).toBe(false);
    expect(progress.step).toBe("hangs");
    expect(
      await boundedStep(logger, progress, "fails", 1_000, async () => {
        throw new Error("boom");
      }),
    ).toBe(false);
  });
});
