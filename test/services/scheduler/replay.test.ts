import { afterEach, describe, expect, it } from "vitest";
import { replayStore } from "../../replay-store.ts";
import { playWholeStory, Scenario } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

describe("replay", () => {
  it("rebuilds identical tables from the whole scenario log in a fresh store", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    await playWholeStory(s);
    expect(s.server.log.lastIndex()).toBeGreaterThan(50);

    const live = s.server.store.hash();
    const fresh = replayStore(s.server.log);
    await fresh.start();
    await fresh.caughtUp();
    expect(fresh.appliedIndex).toBe(s.server.store.appliedIndex);
    expect(fresh.hash()).toBe(live);
    await fresh.stop();
  });
});
