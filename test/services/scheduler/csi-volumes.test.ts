import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { CSIVolumeRow } from "../../../projections/csi-volumes.ts";
import {
  CSI_PLUGIN_MISSING,
  CSI_PLUGIN_UNHEALTHY,
  CSI_VOLUME_GCD_ALLOCATION,
  CSI_VOLUME_IN_USE,
} from "../../../src/services/scheduler/csi-feasibility.ts";
import { type Draft, writeEvents } from "../../../src/store/writer.ts";
import { CSI_CLAIM_STATE_READY_TO_FREE, CSI_CLAIM_WRITE, type CSIClaimState } from "../../../streams/csi.ts";
import {
  claimsUpdated,
  csiInfo,
  volumeClaim,
  volumeSpec,
  volumesRegistered,
} from "../../projections/csi-fixtures.ts";
import { Scenario } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

async function start(): Promise<Scenario> {
  const s = await Scenario.start();
  scenarios.push(s);
  return s;
}

/** A node that runs the `ebs` node plugin (healthy or not), or none. */
const withPlugin = (healthy: boolean | undefined) =>
  healthy === undefined
    ? {}
    : {
        CSINodePlugins: {
          ebs: csiInfo("ebs", "node", { Healthy: healthy, RequiresControllerPlugin: false }),
        },
      };

/** What the csi-release part's RPCs will write: appended here through the server's write path. */
async function write(s: Scenario, draft: Draft): Promise<void> {
  const written = await writeEvents(s.server.store, s.clock.now(), { kind: "server", id: "test" }, [draft]);
  expect(written.outcomes[0]?.status, JSON.stringify(written.outcomes[0])).toBe("applied");
}

const claim = (a: AllocRow, state?: CSIClaimState) =>
  claimsUpdated("data", volumeClaim(a.ID, a.NodeID, CSI_CLAIM_WRITE, state));

/** A service job whose one allocation writes the single-node-writer volume `data`. */
function writerJob(id: string, volume: Record<string, unknown> = {}) {
  return {
    ID: id,
    Type: "service",
    TaskGroups: [
      {
        Name: "g",
        Count: 1,
        Volumes: {
          data: {
            Name: "data",
            Type: "csi",
            Source: "data",
            AccessMode: "single-node-writer",
            AttachmentMode: "file-system",
            ...volume,
          },
        },
        Tasks: [
          {
            Name: "t",
            Driver: "docker",
            Resources: { CPU: 100, MemoryMB: 64 },
            VolumeMounts: [{ Volume: "data", Destination: "/srv" }],
          },
        ],
      },
    ],
  };
}

/** The reasons the job's last failed placement gave, per reason. */
function refusals(s: Scenario, jobID: string): Record<string, number> | undefined {
  const failed = s.evals(jobID).filter((e) => Object.keys(e.FailedTGAllocs ?? {}).length > 0);
  const metric = (
    failed.at(-1)?.FailedTGAllocs as Record<string, { ConstraintFiltered?: Record<string, number> }>
  )?.g;
  return metric?.ConstraintFiltered;
}

const blocked = (s: Scenario, jobID: string) => s.evals(jobID).filter((e) => e.Status === "blocked");

describe("CSI volumes in the scheduler", () => {
  it("places a job's allocations only where the volume's node plugin runs healthy, and a second writer nowhere while the first lives", async () => {
    const s = await start();
    const good = await s.addNode(withPlugin(true));
    const sick = await s.addNode(withPlugin(false));
    const bare = await s.addNode(withPlugin(undefined));
    const logs = [0, 1, 2].map((i) => volumeSpec(`logs[${i}]`));
    await write(s, volumesRegistered(volumeSpec("data"), ...logs));

    // per_alloc: three allocations, three volumes, one node that can mount them.
    const perAlloc = writerJob("logs", { Source: "logs", PerAlloc: true });
    (perAlloc.TaskGroups[0] as { Count: number }).Count = 3;
    await s.register(perAlloc);
    await s.register(writerJob("web"));
    await s.idle();
    expect(s.live("logs").map((a) => a.NodeID)).toEqual([good.id, good.id, good.id]);
    const [web] = s.live("web");
    expect(web?.NodeID).toBe(good.id);
    await s.report([web!], "running");
    // The client claims it at start (csi-release's CSIVolume.Claim).
    await write(s, claim(web!));

    await s.register(writerJob("db"));
    await s.idle();
    expect(s.live("db")).toHaveLength(0);
    expect(blocked(s, "db")).toHaveLength(1);
    expect(refusals(s, "db")).toEqual({
      [CSI_VOLUME_IN_USE("data")]: 1,
      [CSI_PLUGIN_UNHEALTHY("ebs", sick.id)]: 1,
      [CSI_PLUGIN_MISSING("ebs", bare.id)]: 1,
    });
  });

  it("a claim whose allocation was collected gives the recoverable reason, and the blocked evaluation places once the claim is freed", async () => {
    const s = await start();
    await s.addNode(withPlugin(true));
    await write(s, volumesRegistered(volumeSpec("data")));
    await s.register(writerJob("web"));
    await s.idle();
    const [web] = s.live("web");
    await s.report([web!], "running");
    await write(s, claim(web!));

    // The job is gone and its allocation collected, but nobody has released the claim yet.
    expect((await s.call("/v1/job/web?purge=true", "DELETE")).status).toBe(200);
    await s.idle();
    await s.report([web!], "complete");
    expect((await s.call("/v1/system/gc", "PUT")).status).toBe(200);
    await s.idle();
    expect(s.server.store.table<AllocRow>("allocs").get(web!.ID)).toBeUndefined();
    const volume = s.server.store.table<CSIVolumeRow>("csi_volumes").get("default\u0000data");
    expect(Object.keys(volume?.WriteClaims ?? {})).toEqual([web!.ID]);

    await s.register(writerJob("db"));
    await s.idle();
    expect(s.live("db")).toHaveLength(0);
    expect(blocked(s, "db")).toHaveLength(1);
    expect(refusals(s, "db")).toEqual({ [CSI_VOLUME_GCD_ALLOCATION("data", web!.ID)]: 1 });

    // The volume watcher frees the claim (csi-release's unpublish reaching ready-to-free).
    await write(s, claim(web!, CSI_CLAIM_STATE_READY_TO_FREE));
    await s.idle();
    expect(s.live("db")).toHaveLength(1);
    expect(blocked(s, "db")).toHaveLength(0);
  });

  it("a job blocked because no node runs the plugin healthy is placed once one does", async () => {
    const s = await start();
    const node = await s.addNode(withPlugin(false));
    await write(s, volumesRegistered(volumeSpec("data")));
    await s.register(writerJob("web"));
    await s.idle();
    expect(blocked(s, "web")).toHaveLength(1);
    expect(refusals(s, "web")).toEqual({ [CSI_PLUGIN_UNHEALTHY("ebs", node.id)]: 1 });

    // The client fingerprints the plugin healthy (Node.Register again): nothing else changed on the node.
    const again = await node.register({
      Drivers: { docker: { Detected: true, Healthy: true } },
      NodeResources: { Cpu: { CpuShares: 4000 }, Memory: { MemoryMB: 8192 }, Disk: { DiskMB: 100_000 } },
      ...withPlugin(true),
    });
    expect(again.status, again.text).toBe(200);
    await s.idle();
    expect(s.live("web").map((a) => a.NodeID)).toEqual([node.id]);
  });

  it("two jobs registered at once that write one single-writer volume: one is placed, never both", async () => {
    const s = await start();
    await s.addNode(withPlugin(true));
    await s.addNode(withPlugin(true));
    await write(s, volumesRegistered(volumeSpec("data")));
    // Neither client has claimed anything: the check counts live writers as well as claims.
    await Promise.all([s.register(writerJob("a")), s.register(writerJob("b"))]);
    await s.idle();
    const placed = [...s.live("a"), ...s.live("b")];
    expect(placed).toHaveLength(1);
    const loser = placed[0]!.JobID === "a" ? "b" : "a";
    expect(blocked(s, loser)).toHaveLength(1);
    expect(Object.keys(refusals(s, loser) ?? {})).toEqual([CSI_VOLUME_IN_USE("data")]);
  });

  it("refuses a job whose CSI volume request breaks Nomad's rules, naming the volume, and writes nothing", async () => {
    const s = await start();
    const before = s.server.log.lastIndex();
    const res = await s.call("/v1/jobs", "PUT", { Job: writerJob("web", { AccessMode: "" }) });
    expect(res.status).toBe(400);
    expect(res.text).toContain("Task group volume validation for data failed");
    expect(res.text).toContain("CSI volumes must have an access mode");
    expect(s.server.log.lastIndex()).toBe(before);
  });
});
