import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BROWSER_TIMEOUT_MS,
  CHROMIUM_FOUND,
  CHROMIUM_MISSING,
  type Explorer,
  eventually,
  serviceJob,
  startExplorer,
  unnamedControls,
} from "./browser.ts";

/** Whether the page's address is the cluster at index `n`. */
const atIndex = (url: URL, n: number) =>
  new URLSearchParams(url.hash.split("?")[1] ?? "").get("index") === String(n);

/**
 * The cluster as it was at an index (the slider, typed, the keyboard) and
 * the diff between two indexes, in Chromium against a real server whose
 * simulated nodes run the jobs.
 */
describe.skipIf(!CHROMIUM_FOUND)("the cluster-at-index and diff views in Chromium", () => {
  let ui: Explorer;
  /** The index of web's second version (1): one before it, web is at version 0. */
  let updatedAt: number;
  beforeAll(async () => {
    ui = await startExplorer();
    await ui.register(serviceJob("web", 2));
    await ui.settled("web", 2);
    updatedAt = await ui.register(serviceJob("web", 2, { Meta: { release: "2" } }));
    await eventually("web at version 1", () => ui.allocs("web").some((a) => a.Job?.Version === 1));
    await ui.settled("web", 2);
  }, 4 * BROWSER_TIMEOUT_MS);
  afterAll(async () => ui?.stop());

  const versionCell = () =>
    ui.page.locator('table[data-table="jobs"] tr[data-id="web"] td[data-col="Version"]');

  it(
    "shows version 1 now, and version 0 once the slider is moved back to before the update",
    async () => {
      await ui.open("/cluster");
      expect((await versionCell().textContent())?.trim()).toBe("1");
      await ui.screenshot("cluster-latest");

      const slider = ui.page.locator("input#index-slider[type=range]");
      await slider.fill(String(updatedAt - 1));
      await ui.page.waitForURL((url) => atIndex(url, updatedAt - 1));
      await ui.page
        .locator('table[data-table="jobs"] tr[data-id="web"] td[data-col="Version"]', {
          hasText: /^\s*0\s*$/,
        })
        .waitFor();
      await ui.loaded("cluster");
      expect(await ui.page.locator("input#index-input").inputValue()).toBe(String(updatedAt - 1));
      // Nodes and allocations are there too, as of that index.
      expect(await ui.page.locator('table[data-table="nodes"] tr[data-id]').count()).toBe(3);
      expect(await ui.page.locator('table[data-table="allocations"] tr[data-id]').count()).toBeGreaterThan(1);
      await ui.screenshot("cluster-before-update");

      // Typed: the update's own index shows version 1 again.
      await ui.open(`/cluster?index=${updatedAt}`);
      expect((await versionCell().textContent())?.trim()).toBe("1");
    },
    3 * BROWSER_TIMEOUT_MS,
  );

  it(
    "moves the slider one index with the arrow keys, the URL following",
    async () => {
      const start = updatedAt;
      await ui.open(`/cluster?index=${start}`);
      const slider = ui.page.locator("input#index-slider");
      await slider.focus();
      await ui.page.keyboard.press("ArrowLeft");
      await ui.page.waitForURL((url) => atIndex(url, start - 1));
      expect(await slider.inputValue()).toBe(String(start - 1));
      await versionCell()
        .filter({ hasText: /^\s*0\s*$/ })
        .waitFor();
      await ui.page.keyboard.press("ArrowRight");
      await ui.page.waitForURL((url) => atIndex(url, start));
      expect(await slider.inputValue()).toBe(String(start));
      await versionCell()
        .filter({ hasText: /^\s*1\s*$/ })
        .waitFor();
    },
    2 * BROWSER_TIMEOUT_MS,
  );

  it(
    "shows the created job and allocations, and the allocations that changed, between two indexes",
    async () => {
      const before = ui.lastIndex();
      await ui.register(serviceJob("api", 2));
      await eventually("api's allocations placed", () => ui.allocs("api").length === 2);
      const placedAt = Math.max(...ui.allocs("api").map((a) => a.CreateIndex));
      await ui.settled("api", 2);
      const after = ui.lastIndex();
      const ids = ui.allocs("api").map((a) => a.ID);

      await ui.open(`/diff?from=${before}&to=${after}`);
      expect(await ui.page.locator("input#diff-from").inputValue()).toBe(String(before));
      expect(await ui.page.locator("input#diff-to").inputValue()).toBe(String(after));
      const jobs = ui.page.locator('section[data-table="jobs"]');
      expect(await jobs.locator('li[data-change="created"][data-id="api"]').count()).toBe(1);
      const allocs = ui.page.locator('section[data-table="allocations"]');
      for (const id of ids) {
        expect(await allocs.locator(`li[data-change="created"][data-id="${id}"]`).count(), id).toBe(1);
      }
      await ui.screenshot("diff-created");

      // From their placement (pending) to now (running): changed, naming ClientStatus.
      await ui.open(`/diff?from=${placedAt}&to=${after}`);
      for (const id of ids) {
        const changed = allocs.locator(`li[data-change="changed"][data-id="${id}"]`);
        expect(await changed.count(), id).toBe(1);
        expect(await changed.textContent(), id).toContain("ClientStatus");
      }
      expect(await jobs.locator('li[data-change="created"][data-id="api"]').count()).toBe(0);
      await ui.screenshot("diff-changed");
    },
    3 * BROWSER_TIMEOUT_MS,
  );

  it(
    "steps back and forward from one change to the next",
    async () => {
      await ui.open(`/cluster?index=${updatedAt}`);
      const indexNow = async () => Number(new URL(ui.page.url()).hash.match(/index=(\d+)/)?.[1]);
      await ui.page.locator("button#step-back").click();
      await ui.page.waitForURL((url) => !atIndex(url, updatedAt));
      await versionCell()
        .filter({ hasText: /^\s*0\s*$/ })
        .waitFor();
      await ui.loaded("cluster");
      const back = await indexNow();
      expect(back).toBeLessThan(updatedAt);

      await ui.page.locator("button#step-forward").click();
      await ui.page.waitForURL((url) => !atIndex(url, back));
      await versionCell()
        .filter({ hasText: /^\s*1\s*$/ })
        .waitFor();
      await ui.loaded("cluster");
      expect(await indexNow()).toBeGreaterThanOrEqual(updatedAt);
    },
    2 * BROWSER_TIMEOUT_MS,
  );

  it(
    "is usable from the keyboard: the skip link first, then the views by their links",
    async () => {
      await ui.open(`/cluster?index=${updatedAt}`);
      const hash = new URL(ui.page.url()).hash;
      await ui.page.keyboard.press("Tab");
      expect(await ui.page.evaluate("document.activeElement && document.activeElement.id")).toBe("skip");
      await ui.page.keyboard.press("Enter");
      expect(
        await ui.page.evaluate(
          "document.activeElement && document.activeElement.closest('main#view') !== null",
        ),
      ).toBe(true);
      expect(new URL(ui.page.url()).hash).toBe(hash);

      await ui.page.locator('nav a[data-nav="diff"]').focus();
      await ui.page.keyboard.press("Enter");
      await ui.page.waitForURL((url) => url.hash.startsWith("#/diff"));
      await ui.loaded("diff");
      for (const view of ["timeline", "cluster", "diff", "live"]) {
        expect(await ui.page.locator(`nav a[data-nav="${view}"]`).count(), view).toBe(1);
      }
    },
    2 * BROWSER_TIMEOUT_MS,
  );

  it(
    "gives every control of each view an accessible name",
    async () => {
      for (const [route, expected] of [
        ["/", ["textbox"]],
        [`/cluster?index=${updatedAt}`, ["slider", "spinbutton", "button"]],
        [`/diff?from=1&to=${updatedAt}`, ["spinbutton"]],
        ["/live", ["textbox", "button"]],
        ["/timeline/job/web", []],
      ] as const) {
        await ui.open(route);
        const { unnamed, roles } = await unnamedControls(ui.page);
        expect(unnamed, route).toEqual([]);
        for (const role of expected) expect([...roles], route).toContain(role);
      }
      // The job's timeline draws its chart (uPlot), within the page's Content-Security-Policy.
      expect(await ui.page.locator("main#view canvas").count()).toBeGreaterThan(0);
      expect(ui.consoleErrors).toEqual([]);
      expect(ui.pageErrors).toEqual([]);
      await ui.open("/");
      await ui.screenshot("home");
    },
    3 * BROWSER_TIMEOUT_MS,
  );
});

if (!CHROMIUM_FOUND) {
  describe("the cluster-at-index and diff views in Chromium", () => {
    it.skip(CHROMIUM_MISSING, () => {});
  });
}
