import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BROWSER_TIMEOUT_MS,
  CHROMIUM_FOUND,
  CHROMIUM_MISSING,
  type Explorer,
  serviceJob,
  startExplorer,
  unnamedControls,
} from "./browser.ts";

/** Where the page keeps the last index it saw (UI-CONTRACT.md). */
const LAST_INDEX_KEY = "chronomad.live.lastIndex";

interface Shown {
  readonly topic: string | null;
  readonly type: string | null;
  readonly key: string | null;
  readonly index: number;
}

/**
 * The live feed: the event stream as the page shows it, and its resumption
 * after a reload from the last index seen, without repeating what it showed.
 */
describe.skipIf(!CHROMIUM_FOUND)("the live view in Chromium", () => {
  let ui: Explorer;
  beforeAll(async () => {
    ui = await startExplorer();
  }, 2 * BROWSER_TIMEOUT_MS);
  afterAll(async () => ui?.stop());

  const jobEvent = (id: string) =>
    ui.page.locator(
      `ol[data-testid="live-feed"] li[data-testid="event"][data-topic="Job"][data-key="${id}"]`,
    );

  /** The feed as it is at one moment (read in one go: it grows while it is read). */
  async function shown(): Promise<Shown[]> {
    const feed = ui.page.locator('ol[data-testid="live-feed"] li[data-testid="event"]');
    // Runs in the page; typed structurally, the tests' TypeScript has no DOM library.
    return feed.evaluateAll((items: { getAttribute(name: string): string | null }[]) =>
      items.map((li) => ({
        topic: li.getAttribute("data-topic"),
        type: li.getAttribute("data-type"),
        key: li.getAttribute("data-key"),
        index: Number(li.getAttribute("data-index")),
      })),
    );
  }

  const storedIndex = async () =>
    Number(await ui.page.evaluate(`localStorage.getItem(${JSON.stringify(LAST_INDEX_KEY)})`));

  it(
    "shows a job's event once it is registered, and after a reload resumes after the last index seen",
    async () => {
      await ui.open("/live");
      const { unnamed } = await unnamedControls(ui.page);
      expect(unnamed).toEqual([]);

      const first = await ui.register(serviceJob("live-a", 1));
      await jobEvent("live-a").first().waitFor();
      const before = await shown();
      expect(before.some((e) => e.topic === "Job" && e.key === "live-a" && e.index >= first)).toBe(true);
      for (const e of before) expect(Number.isInteger(e.index) && e.index > 0, JSON.stringify(e)).toBe(true);
      await ui.page.waitForFunction(
        `Number(localStorage.getItem(${JSON.stringify(LAST_INDEX_KEY)})) >= ${first}`,
      );
      await ui.screenshot("live");

      // The page may see more before it goes: what it shows after the reload is
      // after this index, at least, and after the live-a events it showed.
      const seen = await storedIndex();
      expect(seen).toBeGreaterThanOrEqual(Math.max(...before.map((e) => e.index)));
      await ui.page.reload();
      await ui.loaded("live");
      const second = await ui.register(serviceJob("live-b", 1));
      await jobEvent("live-b").first().waitFor();
      const after = await shown();
      expect(after.some((e) => e.topic === "Job" && e.key === "live-b" && e.index >= second)).toBe(true);
      expect(after.filter((e) => e.index <= seen)).toEqual([]);
      expect(await jobEvent("live-a").count()).toBe(0);
      const keys = after.map((e) => `${e.index} ${e.topic} ${e.type} ${e.key}`);
      expect(new Set(keys).size, keys.join("\n")).toBe(keys.length);
      expect(await storedIndex()).toBeGreaterThanOrEqual(second);
    },
    3 * BROWSER_TIMEOUT_MS,
  );

  it(
    "follows on across a server restart, from the last index seen, without repeating an event",
    async () => {
      await ui.open("/live");
      await ui.register(serviceJob("live-c", 1));
      await jobEvent("live-c").first().waitFor();
      const before = await shown();
      const seenC = before.filter((e) => e.topic === "Job" && e.key === "live-c");

      await ui.restart();
      const next = await ui.register(serviceJob("live-d", 1));
      // The same page, no reload: the feed reconnects by itself.
      await jobEvent("live-d").first().waitFor();
      const after = await shown();
      expect(after.some((e) => e.topic === "Job" && e.key === "live-d" && e.index >= next)).toBe(true);
      expect(after.filter((e) => e.topic === "Job" && e.key === "live-c")).toEqual(seenC);
      const keys = after.map((e) => `${e.index} ${e.topic} ${e.type} ${e.key}`);
      expect(new Set(keys).size, keys.join("\n")).toBe(keys.length);
      await ui.loaded("live");
    },
    3 * BROWSER_TIMEOUT_MS,
  );

  it(
    "filters the feed by topic, keeping the filter in the URL",
    async () => {
      await ui.open("/live");
      await ui.page.locator("input#live-topics").fill("Job");
      await ui.page.locator("input#live-topics").press("Enter");
      await ui.page.waitForURL((url) => url.hash.includes("topics=Job"));
      const from = await ui.register(serviceJob("live-e", 1));
      // The job's PlanResult follows its placement: by then the allocation's own events were sent too.
      await ui.page
        .locator(
          'ol[data-testid="live-feed"] li[data-testid="event"][data-topic="Job"][data-key="live-e"][data-type="PlanResult"]',
        )
        .waitFor();
      const later = (await shown()).filter((e) => e.index >= from);
      expect(later.length).toBeGreaterThan(0);
      expect(later.filter((e) => e.topic !== "Job")).toEqual([]);
    },
    2 * BROWSER_TIMEOUT_MS,
  );
});

if (!CHROMIUM_FOUND) {
  describe("the live view in Chromium", () => {
    it.skip(CHROMIUM_MISSING, () => {});
  });
}
