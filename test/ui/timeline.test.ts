import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NodeRow } from "../../projections/nodes.ts";
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

/** The screenshot README.md shows. */
const README_SCREENSHOT = join(import.meta.dirname, "..", "..", "docs", "images", "ui-timeline.png");

/**
 * README's picture of the view (`UPDATE_README_SCREENSHOT=1`): the same page
 * at three quarters of the pixels, so the whole timeline fits in a small PNG.
 */
async function readmeScreenshot(page: Page): Promise<void> {
  const browser = page.context().browser()!;
  const context = await browser.newContext({
    viewport: { width: 1200, height: 700 },
    deviceScaleFactor: 0.75,
  });
  try {
    const small = await context.newPage();
    await small.goto(page.url());
    await small
      .locator('main#view[data-view="timeline"][data-state="loaded"]')
      .waitFor({ state: "attached" });
    await small.screenshot({ path: README_SCREENSHOT, fullPage: true });
  } finally {
    await context.close();
  }
}

/** max_client_disconnect of an hour: an allocation outlives its node's silence as "unknown". */
const HOUR_NS = 3_600_000_000_000;

/**
 * The timeline of an allocation whose node stopped heartbeating past its
 * grace and came back: the server marked it unknown, then running again
 * (Nomad's AllocStates), and the page shows both entries in log order.
 */
describe.skipIf(!CHROMIUM_FOUND)("the timeline view in Chromium", () => {
  let ui: Explorer;
  let allocID: string;
  let nodeID: string;
  beforeAll(async () => {
    ui = await startExplorer();
    await ui.register(serviceJob("web", 3, {}, { MaxClientDisconnect: HOUR_NS }));
    await ui.settled("web", 3);
    const alloc = ui.allocs("web")[0]!;
    allocID = alloc.ID;
    const node = ui.sim.nodes.find((n) => n.id === alloc.NodeID)!;
    nodeID = node.id;
    node.silence();
    await eventually("the silent node's allocation unknown", () =>
      ui.allocs("web").some((a) => a.ID === allocID && a.ClientStatus === "unknown"),
    );
    await node.reconnect();
    await eventually("the allocation running again after the reconnect", () => {
      const a = ui.allocs("web").find((x) => x.ID === allocID);
      return a?.ClientStatus === "running" && a.AllocStates?.length === 2;
    });
    await eventually(
      "the node ready again",
      () => ui.server.store.table<NodeRow>("nodes").get(nodeID)?.Status === "ready",
    );
  }, 4 * BROWSER_TIMEOUT_MS);
  afterAll(async () => ui?.stop());

  it(
    "shows the allocation's AllocState entries: ClientStatus unknown, then running again",
    async () => {
      await ui.open(`/timeline/allocation/${allocID}`);
      const entries = ui.page.locator('ol[data-testid="timeline"] li[data-testid="transition"]');
      expect(await entries.count()).toBeGreaterThan(2);

      const states = ui.page.locator(
        'ol[data-testid="timeline"] li[data-testid="transition"][data-field="AllocStates"]',
      );
      const shown = await states.locator('[data-part="to"]').allTextContents();
      expect(shown.map((t) => t.replace(/\s+/g, " ").trim())).toEqual([
        expect.stringContaining("ClientStatus: unknown"),
        expect.stringContaining("ClientStatus: running"),
      ]);
      // Log order: the indexes grow down the list.
      const indexes: number[] = [];
      for (const entry of await entries.all()) indexes.push(Number(await entry.getAttribute("data-index")));
      expect(indexes.every((n) => Number.isInteger(n) && n > 0)).toBe(true);
      expect([...indexes].sort((a, b) => a - b)).toEqual(indexes);
      // Every transition names its cause and actor.
      expect(await entries.first().locator('[data-part="cause"]').count()).toBe(1);
      expect(await entries.first().locator('[data-part="actor"]').count()).toBe(1);

      const { unnamed } = await unnamedControls(ui.page);
      expect(unnamed).toEqual([]);
      await ui.screenshot("timeline");
      if (process.env.UPDATE_README_SCREENSHOT) await readmeScreenshot(ui.page);
    },
    2 * BROWSER_TIMEOUT_MS,
  );

  it(
    "shows the node's timeline: disconnected, then ready again",
    async () => {
      await ui.open(`/timeline/node/${nodeID}`);
      const statuses = await ui.page
        .locator(
          'ol[data-testid="timeline"] li[data-testid="transition"][data-field="Status"] [data-part="to"]',
        )
        .allTextContents();
      const shown = statuses.map((t) => t.trim());
      const disconnected = shown.indexOf("disconnected");
      expect(disconnected, shown.join(", ")).toBeGreaterThanOrEqual(0);
      expect(shown.slice(disconnected + 1), shown.join(", ")).toContain("ready");
      await ui.screenshot("timeline-node");
    },
    2 * BROWSER_TIMEOUT_MS,
  );

  it(
    "links a cause that names another object to that object's timeline",
    async () => {
      await ui.open(`/timeline/allocation/${allocID}`);
      const link = ui.page
        .locator('ol[data-testid="timeline"] [data-part="cause"] a[href^="#/timeline/"]')
        .first();
      const href = await link.getAttribute("href");
      expect(href).toMatch(/^#\/timeline\/(evaluation|node|allocation|job)\/.+/);
      await link.click();
      await ui.page.waitForURL((url) => url.hash === href);
      // The view it leads to loads on its own (a reload: the same view's old state is gone).
      await ui.page.reload();
      await ui.loaded("timeline");
      expect(
        await ui.page.locator('ol[data-testid="timeline"] li[data-testid="transition"]').count(),
      ).toBeGreaterThan(0);
    },
    2 * BROWSER_TIMEOUT_MS,
  );
});

if (!CHROMIUM_FOUND) {
  describe("the timeline view in Chromium", () => {
    it.skip(CHROMIUM_MISSING, () => {});
  });
}
