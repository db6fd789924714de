import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import type { CSIDetachRow } from "../../projections/csi-detach-requests.ts";
import { csiDetachKey } from "../../projections/csi-detach-requests.ts";
import type { CSIPluginRow } from "../../projections/csi-plugins.ts";
import { runNodesim } from "../../src/cli/nodesim-command.ts";
import { SIMULATED_DETACH_ERROR } from "../../src/nodesim/csi-plugins.ts";
import { writeEvents } from "../../src/store/writer.ts";
import { allNodesReady, eventually, FAST_HEARTBEATS, nodesTable } from "../nodesim/fixtures.ts";
import { volumeSpec, volumesRegistered } from "../projections/csi-fixtures.ts";
import { startTestServer } from "../server-harness.ts";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** A stream that keeps what is written to it. */
function sink() {
  const stream = new PassThrough();
  let text = "";
  stream.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { stream, text: () => text };
}

describe("chronomad nodesim: CSI plugin flags", () => {
  it("fingerprints the plugins named by --csi-node-plugins and --csi-controller-plugins, and answers detach calls as --csi-detach says", async () => {
    const s = await startTestServer();
    cleanup.push(() => s.stop());
    const out = sink();
    const err = sink();
    const stop = new AbortController();
    const run = runNodesim(
      [
        ...["--server", s.url, "--nodes", "2", "--seed", "csi-flags", "--report-every", "0"],
        ...["--initial-heartbeat-stagger", "200ms"],
        ...["--csi-node-plugins", "ebs", "--csi-controller-plugins", "ebs,nfs", "--csi-detach", "fail"],
      ],
      out.stream,
      err.stream,
      stop.signal,
    );
    cleanup.push(async () => {
      stop.abort();
      await run;
    });
    const plugin = (id: string) => s.store.table<CSIPluginRow>("csi_plugins").get(id);
    await eventually("both nodes run plugin ebs (node and controller) and nfs (controller)", () => {
      const ebs = plugin("ebs");
      const nfs = plugin("nfs");
      return (
        ebs?.NodesHealthy === 2 &&
        ebs.ControllersHealthy === 2 &&
        nfs?.ControllersHealthy === 2 &&
        nfs.NodesHealthy === 0
      );
    });

    // A detach call to one of them: its plugin answers with the simulated failure.
    const [node] = [...nodesTable(s).all()];
    const now = Date.now();
    const written = await writeEvents(s.store, now, { kind: "server", id: "test" }, [
      volumesRegistered(volumeSpec("vol1")),
      {
        type: "CSIDetachRequested",
        v: 1,
        data: {
          Request: {
            RequestID: "r1",
            Namespace: "default",
            VolumeID: "vol1",
            ExternalID: "ext-vol1",
            PluginID: "ebs",
            NodeID: node!.ID,
            Kind: "node",
            Claim: {
              AllocationID: "a1",
              NodeID: node!.ID,
              ExternalNodeID: `ext-${node!.ID}`,
              Mode: 1,
              AccessMode: "single-node-writer",
              AttachmentMode: "file-system",
              State: 4,
            },
            Attempt: 1,
            Deadline: now + 3_600_000,
          },
        },
      },
    ]);
    expect(written.outcomes.map((o) => o.status)).toEqual(["applied", "applied"]);
    const detach = () =>
      s.store.table<CSIDetachRow>("csi_detach_requests").get(csiDetachKey("default", "vol1"))?.Detach;
    await eventually("the node answered the detach call", () => detach()?.Outcome === "failed");
    expect(detach()).toMatchObject({ RequestID: "r1", NodeID: node!.ID, Error: SIMULATED_DETACH_ERROR });

    stop.abort();
    expect(await run).toBe(0);
    const report = JSON.parse(out.text()) as { nodes: { total: number } };
    expect(report.nodes.total).toBe(2);
  });

  it("refuses bad plugin lists and detach behaviours with a usage error naming the flag", async () => {
    for (const [args, message] of [
      [["--csi-node-plugins", "ebs,,nfs"], "--csi-node-plugins must be plugin IDs separated by commas"],
      [["--csi-controller-plugins", "ebs,ebs"], "--csi-controller-plugins lists plugin ebs twice"],
      [["--csi-detach", "maybe"], '--csi-detach must be one of ack, fail, ignore, not "maybe"'],
    ] as const) {
      const out = sink();
      const err = sink();
      const code = await runNodesim(
        ["--server", "http://127.0.0.1:1", "--nodes", "1", ...args],
        out.stream,
        err.stream,
      );
      expect(code).toBe(2);
      expect(err.text()).toContain(message);
      expect(out.text()).toBe("");
    }
  });

  it("documents the flags in --help", async () => {
    const out = sink();
    expect(await runNodesim(["--help"], out.stream)).toBe(0);
    for (const flag of [
      "--csi-node-plugins IDS",
      "--csi-controller-plugins IDS",
      "--csi-detach ack|fail|ignore",
    ])
      expect(out.text()).toContain(flag);
  });
});

describe("chronomad nodesim: --heartbeats-from", () => {
  /** Runs 3 nodes until every one is ready (each heartbeated once at least); resolves with the printed report. */
  async function runUntilReady(from: string[]) {
    const s = await startTestServer({ args: FAST_HEARTBEATS });
    cleanup.push(() => s.stop());
    const out = sink();
    const err = sink();
    const stop = new AbortController();
    const run = runNodesim(
      [
        ...["--server", s.url, "--nodes", "3", "--seed", "heartbeats-from", "--report-every", "0"],
        ...["--initial-heartbeat-stagger", "200ms", ...from],
      ],
      out.stream,
      err.stream,
      stop.signal,
    );
    cleanup.push(async () => {
      stop.abort();
      await run;
    });
    await eventually("every node ready: each heartbeated", () => allNodesReady(s, 3));
    stop.abort();
    expect(await run).toBe(0);
    return {
      report: JSON.parse(out.text()) as {
        heartbeats_from: string;
        heartbeat_thread_calls?: number;
        rpc: Record<string, { calls: number; errors: number }>;
      },
      err: err.text(),
    };
  }

  it("sends every heartbeat from a thread of their own by default, as with --heartbeats-from thread, and says so", async () => {
    const { report, err } = await runUntilReady([]);
    expect(report.heartbeats_from).toBe("thread");
    const heartbeats = report.rpc["Node.UpdateStatus"]!.calls;
    expect(heartbeats).toBeGreaterThanOrEqual(3);
    // The thread sent them all; the main thread none.
    expect(report.heartbeat_thread_calls).toBe(heartbeats);
    expect(err).toContain("heartbeating from a thread of their own");
  });

  it("sends them from the main thread with --heartbeats-from main", async () => {
    const { report, err } = await runUntilReady(["--heartbeats-from", "main"]);
    expect(report.heartbeats_from).toBe("main");
    expect(report.rpc["Node.UpdateStatus"]!.calls).toBeGreaterThanOrEqual(3);
    expect(report.heartbeat_thread_calls).toBeUndefined();
    expect(err).toContain("heartbeating from the main thread");
  });

  it("refuses another value with a usage error naming the flag, and documents it in --help", async () => {
    const out = sink();
    const err = sink();
    const code = await runNodesim(
      ["--server", "http://127.0.0.1:1", "--nodes", "1", "--heartbeats-from", "worker"],
      out.stream,
      err.stream,
    );
    expect(code).toBe(2);
    expect(err.text()).toContain('--heartbeats-from must be thread or main, not "worker"');
    expect(out.text()).toBe("");

    const help = sink();
    expect(await runNodesim(["--help"], help.stream)).toBe(0);
    expect(help.text()).toContain("--heartbeats-from thread|main");
  });
});
