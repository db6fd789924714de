import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { expect } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { NodeSimulator } from "../../src/nodesim/simulator.ts";
import { FAST_DRIVER, FAST_HEARTBEATS } from "../nodesim/fixtures.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";

/**
 * The browser tests' harness: Debian's Chromium, headless, driven by
 * playwright-core, against a real chronomad on 127.0.0.1 with simulated
 * client nodes (src/nodesim). Tests wait on the page's own
 * `data-state="loaded"` (UI-CONTRACT.md), never on time.
 */

/** Debian's package, or CHROMIUM_PATH. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

/** Whether the browser tests can run; when not, `describe.skipIf` and this message say why. */
export const CHROMIUM_FOUND = existsSync(CHROMIUM_PATH);

export const CHROMIUM_MISSING =
  `browser tests skipped: Chromium not found at ${CHROMIUM_PATH}; ` +
  "install it with `apt-get install chromium` (Debian), or set CHROMIUM_PATH to a Chromium executable";

if (!CHROMIUM_FOUND) console.warn(CHROMIUM_MISSING);

/**
 * Where screenshots go: $CI_ARTIFACTS_DIR/ui-screenshots when CI names a
 * folder it keeps, else test-results/ui-screenshots (git-ignored).
 */
export const SCREENSHOT_DIR = process.env.CI_ARTIFACTS_DIR
  ? join(process.env.CI_ARTIFACTS_DIR, "ui-screenshots")
  : join(import.meta.dirname, "..", "..", "test-results", "ui-screenshots");

/** Generous: CI has two cores, shared by a server, simulated nodes and a browser. */
export const BROWSER_TIMEOUT_MS = 60_000;

/** Simulated client nodes per test server: enough for a job of three on distinct nodes. */
const NODES = 3;

export interface Explorer {
  readonly server: TestServer;
  readonly sim: NodeSimulator;
  readonly page: Page;
  /** What the page logged as errors (a Content-Security-Policy refusal among them), and its uncaught exceptions. */
  readonly consoleErrors: string[];
  readonly pageErrors: string[];
  /** Opens `/ui/#<route>` and waits until the view has loaded its data. */
  open(route: string): Promise<void>;
  /** Waits until `main#view` is of `view` and loaded (after a navigation the page made itself). */
  loaded(view: string): Promise<void>;
  /** Writes `<name>.png` of the whole page into SCREENSHOT_DIR; returns its path. */
  screenshot(name: string): Promise<string>;
  /** The X-Nomad-Token of the harness's own API calls (register), when ACLs are on. */
  token: string | undefined;
  /** PUT /v1/jobs; the index of the job's new version (JobModifyIndex), applied by the server's tables. */
  register(job: Record<string, unknown>): Promise<number>;
  /** The server's allocations of a job (its tables, not the page). */
  allocs(jobID: string): AllocRow[];
  /** The index of the last record applied. */
  lastIndex(): number;
  /** `count` allocations of `jobID` running, as the server's tables have them. */
  settled(jobID: string, count: number): Promise<void>;
  /** Stops the server and starts it again on its log, at the same address (the page stays open). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A server with simulated nodes and a headless Chromium page on it; `stop`
 * ends all three. `args`: the server's flags besides the harness's.
 */
export async function startExplorer(options: { args?: readonly string[] } = {}): Promise<Explorer> {
  const args = [...FAST_HEARTBEATS, ...(options.args ?? [])];
  // The data directory outlives a restart; removed by stop.
  let server = await startTestServer({ args, keepDir: true });
  const { dataDir, url } = server;
  const stops: (() => Promise<unknown>)[] = [
    () => rm(dataDir, { recursive: true, force: true }),
    () => server.stop(),
  ];
  const stop = async () => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  try {
    const sim = new NodeSimulator({
      server: server.url,
      nodes: NODES,
      seed: "ui",
      initialHeartbeatStaggerMs: 200,
      driver: FAST_DRIVER,
    });
    stops.push(() => sim.stop());
    await sim.start();
    await eventually("every simulated node ready", () => readyNodes(server) === NODES);

    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM_PATH,
      headless: true,
      // Containers often run as root without a user namespace for the sandbox.
      args: ["--no-sandbox", "--disable-dev-shm-usage"],
    });
    stops.push(() => browser.close());
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(BROWSER_TIMEOUT_MS);
    const pageErrors: string[] = [];
    page.on("pageerror", (err) => pageErrors.push(err.message));
    const consoleErrors: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(`${page.url()}: ${message.text()}`);
    });

    const loaded = async (view: string) => {
      const main = page.locator(`main#view[data-view="${view}"]`);
      await page
        .locator(`main#view[data-view="${view}"]:is([data-state="loaded"], [data-state="error"])`)
        .waitFor({ state: "attached" });
      const state = await main.getAttribute("data-state");
      if (state !== "loaded") {
        const text = ((await main.textContent()) ?? "").slice(0, 500);
        throw new Error(
          `view ${view} ended in state ${state}: ${text}; page errors: ${pageErrors.join("; ")}`,
        );
      }
    };

    const explorer: Explorer = {
      token: undefined,
      get server() {
        return server;
      },
      sim,
      page,
      consoleErrors,
      pageErrors,
      loaded,
      open: async (route) => {
        // A fresh load: from one hash to another the page keeps its document,
        // and the previous view's "loaded" would answer for the new one.
        await page.goto("about:blank");
        await page.goto(`${url}/ui/#${route}`);
        await loaded(viewOf(route));
      },
      screenshot: async (name) => {
        await mkdir(SCREENSHOT_DIR, { recursive: true });
        const path = join(SCREENSHOT_DIR, `${name}.png`);
        await page.screenshot({ path, fullPage: true });
        return path;
      },
      register: async (job) => {
        const res = await server.call("/v1/jobs", {
          method: "PUT",
          headers: {
            "content-type": "application/json",
            ...(explorer.token === undefined ? {} : { "X-Nomad-Token": explorer.token }),
          },
          body: JSON.stringify({ Job: job }),
        });
        const text = await res.text();
        expect(res.status, text).toBe(200);
        await server.store.caughtUp();
        return (JSON.parse(text) as { JobModifyIndex: number }).JobModifyIndex;
      },
      allocs: (jobID) =>
        server.store
          .table<AllocRow>("allocs")
          .by("job", `default\u0000${jobID}`)
          .sort((a, b) => a.CreateIndex - b.CreateIndex || (a.ID < b.ID ? -1 : 1)),
      lastIndex: () => server.store.appliedIndex,
      settled: async (jobID, count) =>
        eventually(`${count} allocations of ${jobID} running`, () => {
          const running = server.store
            .table<AllocRow>("allocs")
            .by("job", `default\u0000${jobID}`)
            .filter((a) => a.DesiredStatus === "run" && a.ClientStatus === "running");
          return running.length === count;
        }),
      restart: async () => {
        await server.close();
        server = await startTestServer({
          dataDir,
          args: [...args, "--http-addr", new URL(url).host, "--rpc-addr", "127.0.0.1:0"],
        });
      },
      stop,
    };
    return explorer;
  } catch (err) {
    await stop();
    throw err;
  }
}

/** `/timeline/allocation/x` -> `timeline`; `/cluster?index=3` -> `cluster`; `/` -> `home`. */
function viewOf(route: string): string {
  const first = route.replace(/^\//, "").split(/[/?]/, 1)[0];
  return first === "" || first === undefined ? "home" : first;
}

function readyNodes(server: TestServer): number {
  let n = 0;
  for (const row of server.store.table<NodeRow>("nodes").all()) if (row.Status === "ready") n++;
  return n;
}

/** Polls a condition of the server's state (not the page's: the page has data-state). */
export async function eventually(what: string, check: () => boolean, timeoutMs = BROWSER_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A service job of `count` mock_driver tasks that run until stopped; `extra`
 * on the job, `group` on its one task group.
 */
export function serviceJob(
  id: string,
  count: number,
  extra: Record<string, unknown> = {},
  group: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    ID: id,
    Name: id,
    Namespace: "default",
    Type: "service",
    Priority: 50,
    Datacenters: ["dc1"],
    Update: { MaxParallel: 0 },
    ...extra,
    TaskGroups: [
      {
        Name: "g",
        Count: count,
        EphemeralDisk: { SizeMB: 10 },
        RestartPolicy: { Attempts: 0, Interval: 60e9, Delay: 1e9, Mode: "fail" },
        ...group,
        Tasks: [
          {
            Name: "app",
            Driver: "mock_driver",
            Config: {},
            Resources: { CPU: 100, MemoryMB: 64 },
            LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
          },
        ],
      },
    ],
  };
}

/**
 * The roles of the form controls in the page's accessibility tree (as
 * Chromium computes it) that have no accessible name: each line of the ARIA
 * snapshot for a control, without a quoted name. `roles` found at all are
 * returned too, so a test can check the controls it expects were there.
 */
export async function unnamedControls(page: Page): Promise<{ unnamed: string[]; roles: Set<string> }> {
  const snapshot = await page.locator("body").ariaSnapshot();
  const control = /^\s*- (textbox|searchbox|slider|spinbutton|combobox|checkbox|radio|button|switch)\b(.*)$/;
  const unnamed: string[] = [];
  const roles = new Set<string>();
  for (const line of snapshot.split("\n")) {
    const m = control.exec(line);
    if (!m) continue;
    roles.add(m[1]!);
    if (!/^ "[^"]+"/.test(m[2]!)) unnamed.push(line.trim());
  }
  return { unnamed, roles };
}
