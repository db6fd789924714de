import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BROWSER_TIMEOUT_MS,
  CHROMIUM_FOUND,
  CHROMIUM_MISSING,
  type Explorer,
  serviceJob,
  startExplorer,
} from "./browser.ts";

/**
 * With ACLs on, the page asks the API as its user: without a token the
 * cluster is refused and the view says so; with the token typed in the
 * header (kept in sessionStorage `nomad.token`, sent as X-Nomad-Token) it is
 * shown. The page's own files need no token.
 */
describe.skipIf(!CHROMIUM_FOUND)("the history explorer with ACLs on, in Chromium", () => {
  let ui: Explorer;
  let secret: string;
  beforeAll(async () => {
    ui = await startExplorer({ args: ["--acl-enabled"] });
    const boot = await ui.server.call("/v1/acl/bootstrap", { method: "POST" });
    expect(boot.status).toBe(200);
    secret = ((await boot.json()) as { SecretID: string }).SecretID;
    ui.token = secret;
    await ui.register(serviceJob("guarded", 1));
  }, 3 * BROWSER_TIMEOUT_MS);
  afterAll(async () => ui?.stop());

  it(
    "shows an error without a token, and the cluster once the token is saved",
    async () => {
      await ui.page.goto(`${ui.server.url}/ui/#/cluster`);
      const main = ui.page.locator('main#view[data-view="cluster"]');
      await ui.page
        .locator('main#view[data-view="cluster"][data-state="error"]')
        .waitFor({ state: "attached" });
      expect(await main.textContent()).toMatch(/403|[Pp]ermission denied/);

      await ui.page.locator("input#acl-token").fill(secret);
      await ui.page.locator("input#acl-token").press("Enter");
      expect(await ui.page.evaluate("sessionStorage.getItem('nomad.token')")).toBe(secret);
      await ui.page.reload();
      await ui.loaded("cluster");
      expect(await ui.page.locator('table[data-table="jobs"] tr[data-id="guarded"]').count()).toBe(1);
      // The secret is never shown back in the field's text or the page's address.
      expect(await ui.page.locator("input#acl-token").getAttribute("type")).toBe("password");
      expect(ui.page.url()).not.toContain(secret);
      expect(ui.pageErrors).toEqual([]);
    },
    2 * BROWSER_TIMEOUT_MS,
  );
});

if (!CHROMIUM_FOUND) {
  describe("the history explorer with ACLs on, in Chromium", () => {
    it.skip(CHROMIUM_MISSING, () => {});
  });
}
