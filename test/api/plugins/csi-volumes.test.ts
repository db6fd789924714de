import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import type { CSIVolumeRow } from "../../../projections/csi-volumes.ts";
import { csiVolumeKey } from "../../../projections/csi-volumes.ts";
import { openVolumeSecrets } from "../../../src/csi/volume-secrets.ts";
import { writeEvents } from "../../../src/store/writer.ts";
import {
  CSI_CLAIM_STATE_READY_TO_FREE,
  CSI_CLAIM_STATE_TAKEN,
  CSI_CLAIM_WRITE,
  type CSIClaimState,
} from "../../../streams/csi.ts";
import { filesUnder } from "../../files-under.ts";
import { csiInfo } from "../../projections/csi-fixtures.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { allocRow, placeAlloc, TestNode } from "../node-fixtures.ts";
import { readStream } from "./event-stream-client.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

/** A server with three ready nodes running plugin `ebs`, the first with its controller too. */
async function setup() {
  const s = await startTestServer();
  running.push(s);
  const nodes = [new TestNode(s), new TestNode(s), new TestNode(s)];
  for (const [i, node] of nodes.entries()) {
    const fingerprint = {
      CSIControllerPlugins: i === 0 ? { ebs: csiInfo("ebs", "controller") } : null,
      CSINodePlugins: { ebs: csiInfo("ebs", "node") },
    };
    expect((await node.register(fingerprint)).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
  }
  return { s, nodes };
}

async function call(s: TestServer, method: string, path: string, body?: unknown) {
  const res = await s.call(path, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  return {
    status: res.status,
    body: (type.startsWith("application/json") && text !== "" ? JSON.parse(text) : text) as Record<
      string,
      unknown
    > &
      unknown[],
    index: Number(res.headers.get("x-nomad-index")),
    next: res.headers.get("x-nomad-nexttoken"),
  };
}

function volumeBody(id: string, fields: Record<string, unknown> = {}) {
  return {
    ID: id,
    Name: id,
    ExternalID: `vol-${id}`,
    PluginID: "ebs",
    RequestedCapabilities: [{ AccessMode: "single-node-writer", AttachmentMode: "file-system" }],
    MountOptions: { FSType: "ext4", MountFlags: ["noatime"] },
    // Ignored as Nomad's Merge ignores them: the server owns them.
    ReadAllocs: { bogus: null },
    Schedulable: false,
    UnknownField: 1,
    ...fields,
  };
}

const register = (s: TestServer, ...volumes: unknown[]) =>
  call(s, "PUT", "/v1/volumes", { Volumes: volumes });

async function claim(s: TestServer, volumeID: string, allocID: string, nodeID: string, State: CSIClaimState) {
  const { outcomes } = await writeEvents(s.store, Date.now(), { kind: "node", id: nodeID }, [
    {
      type: "CSIVolumeClaimsUpdated",
      v: 1,
      data: {
        Namespace: "default",
        VolumeID: volumeID,
        Claims: [
          {
            AllocationID: allocID,
            NodeID: nodeID,
            ExternalNodeID: "",
            Mode: CSI_CLAIM_WRITE,
            AccessMode: "single-node-writer",
            AttachmentMode: "file-system",
            State,
          },
        ],
      },
    },
  ]);
  return outcomes[0]!;
}

const logLength = (s: TestServer) => s.store.appliedIndex;

describe("CSI plugins API", () => {
  it("lists and reads the plugins the nodes fingerprint, with Nomad's counts and maps", async () => {
    const { s, nodes } = await setup();
    expect((await call(s, "GET", "/v1/plugins")).body).toEqual([]);
    expect((await call(s, "GET", "/v1/plugins?type=host")).body).toBeNull();
    const list = await call(s, "GET", "/v1/plugins?type=csi");
    expect(list.body).toEqual([
      expect.objectContaining({
        ID: "ebs",
        Provider: "ebs.csi.aws.com",
        ControllerRequired: true,
        ControllersHealthy: 1,
        ControllersExpected: 1,
        NodesHealthy: 3,
        NodesExpected: 3,
      }),
    ]);
    const plugin = await call(s, "GET", "/v1/plugin/csi/ebs");
    expect(plugin.status).toBe(200);
    expect(Object.keys(plugin.body.Controllers as object)).toEqual([nodes[0]!.id]);
    expect(Object.keys(plugin.body.Nodes as object).sort()).toEqual(nodes.map((n) => n.id).sort());
    expect(plugin.body.Allocations).toEqual([]);
    expect((await call(s, "GET", "/v1/plugin/csi/nope")).status).toBe(404);
  });
});

describe("CSI volumes API", () => {
  it("lists nothing without a type, null for another type, and csi volumes with type=csi", async () => {
    const { s } = await setup();
    expect((await call(s, "GET", "/v1/volumes")).body).toEqual([]);
    expect((await call(s, "GET", "/v1/volumes?type=host")).body).toBeNull();
    expect((await call(s, "GET", "/v1/volumes?type=csi")).body).toEqual([]);
  });

  it("registers, reads with Nomad's JSON, lists with filters and pages, and deregisters", async () => {
    const { s } = await setup();
    const created = await register(s, volumeBody("db"), volumeBody("web"), volumeBody("cache"));
    expect(created.status).toBe(200);
    expect(created.index).toBeGreaterThan(0);
    const vol = await call(s, "GET", "/v1/volume/csi/db");
    expect(vol.status).toBe(200);
    expect(vol.body).toMatchObject({
      ID: "db",
      Namespace: "default",
      ExternalID: "vol-db",
      PluginID: "ebs",
      Provider: "ebs.csi.aws.com",
      ProviderVersion: "1.2.0",
      Schedulable: true,
      ControllerRequired: true,
      ControllersHealthy: 1,
      NodesHealthy: 3,
      Secrets: null,
      MountOptions: { FSType: "ext4", MountFlags: ["[REDACTED]"] },
      ReadAllocs: {},
      WriteAllocs: {},
      Allocations: [],
      AccessMode: "",
    });
    expect(vol.body).not.toHaveProperty("SealedSecrets");
    expect((await call(s, "GET", "/v1/volume/csi/nope")).status).toBe(404);
    expect((await call(s, "GET", "/v1/volume/csi/nope")).body).toBe("volume not found");

    const all = await call(s, "GET", "/v1/volumes?type=csi");
    expect((all.body as { ID: string }[]).map((v) => v.ID)).toEqual(["cache", "db", "web"]);
    expect(all.body[0]).toMatchObject({
      CurrentReaders: 0,
      CurrentWriters: 0,
      Schedulable: true,
      NodesHealthy: 3,
    });
    expect((await call(s, "GET", "/v1/volumes?type=csi&prefix=w")).body).toHaveLength(1);
    expect((await call(s, "GET", "/v1/volumes?type=csi&plugin_id=other")).body).toEqual([]);
    expect((await call(s, "GET", "/v1/volumes?type=csi&namespace=*")).body).toHaveLength(3);
    const filtered = await call(s, "GET", `/v1/volumes?type=csi&filter=${encodeURIComponent('ID == "web"')}`);
    expect((filtered.body as { ID: string }[]).map((v) => v.ID)).toEqual(["web"]);
    const first = await call(s, "GET", "/v1/volumes?type=csi&per_page=2");
    expect(first.body).toHaveLength(2);
    expect(first.next).toBe("default.web");
    const second = await call(s, "GET", `/v1/volumes?type=csi&per_page=2&next_token=${first.next}`);
    expect((second.body as { ID: string }[]).map((v) => v.ID)).toEqual(["web"]);

    expect((await call(s, "DELETE", "/v1/volume/csi/web")).status).toBe(200);
    expect((await call(s, "GET", "/v1/volume/csi/web")).status).toBe(404);
    expect((await call(s, "DELETE", "/v1/volume/csi/web")).status).toBe(404);
  });

  it("finds volumes and plugins by prefix search, and plugins by fuzzy search", async () => {
    const { s } = await setup();
    await register(s, volumeBody("db"), volumeBody("dbx"), volumeBody("web"));
    const prefix = await call(s, "PUT", "/v1/search", { Prefix: "db", Context: "volumes" });
    expect(prefix.body).toMatchObject({
      Matches: { volumes: ["db", "dbx"] },
      Truncations: { volumes: false },
    });
    const plugins = await call(s, "PUT", "/v1/search", { Prefix: "eb", Context: "plugins" });
    expect(plugins.body).toMatchObject({ Matches: { plugins: ["ebs"] } });
    const fuzzy = await call(s, "PUT", "/v1/search/fuzzy", { Text: "bs", Context: "plugins" });
    expect(fuzzy.body).toMatchObject({ Matches: { plugins: [{ ID: "ebs" }] } });
  });

  it("answers a blocking read when the volume changes", async () => {
    const { s } = await setup();
    await register(s, volumeBody("db"));
    const before = await call(s, "GET", "/v1/volume/csi/db");
    const waiting = call(s, "GET", `/v1/volume/csi/db?index=${before.index}&wait=10s`);
    await register(s, volumeBody("db", { Context: { changed: "yes" } }));
    const after = await waiting;
    expect(after.index).toBeGreaterThan(before.index);
    expect(after.body.Context).toEqual({ changed: "yes" });
  });

  it("refuses bad input with a 4xx naming it, and appends nothing", async () => {
    const { s } = await setup();
    await register(s, volumeBody("db"));
    const cases: [unknown, number, string][] = [
      [{ Volumes: [] }, 400, "missing volume definition"],
      [{ Volumes: [volumeBody("x", { PluginID: "nope" })] }, 400, "no CSI plugin named: nope could be found"],
      [
        { Volumes: [volumeBody("x", { RequestedCapabilities: [] })] },
        400,
        "must include at least one capability block",
      ],
      [
        {
          Volumes: [
            volumeBody("x", {
              RequestedCapabilities: [{ AccessMode: "all-of-them", AttachmentMode: "file-system" }],
            }),
          ],
        },
        400,
        'invalid access mode "all-of-them"',
      ],
      [
        { Volumes: [volumeBody("db", { ExternalID: "vol-other" })] },
        400,
        "volume external ID cannot be updated",
      ],
      [{ Volumes: [volumeBody("db", { PluginID: "other" })] }, 400, "volume plugin ID cannot be updated"],
      [
        { Volumes: [volumeBody("x", { Namespace: "nowhere" })] },
        400,
        "volume x is in nonexistent namespace nowhere",
      ],
      [{ Volumes: [volumeBody("x"), volumeBody("x")] }, 400, "volume x is listed twice"],
      [{ Volumes: "no" }, 400, "Volumes"],
    ];
    for (const [body, status, text] of cases) {
      const before = logLength(s);
      const res = await call(s, "PUT", "/v1/volumes", body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(String(res.body)).toContain(text);
      expect(logLength(s)).toBe(before);
    }
    const before = logLength(s);
    expect((await call(s, "DELETE", "/v1/volume/csi/db?force=maybe")).status).toBe(400);
    expect(logLength(s)).toBe(before);
  });

  it("refuses to delete a namespace that holds a CSI volume, with Nomad's words, until the volume is gone", async () => {
    const { s } = await setup();
    expect((await call(s, "PUT", "/v1/namespace/team", { Name: "team" })).status).toBe(200);
    expect((await register(s, volumeBody("db", { Namespace: "team" }))).status).toBe(200);
    const before = logLength(s);
    const refused = await call(s, "DELETE", "/v1/namespace/team");
    expect(refused.status).toBe(400);
    expect(refused.body).toContain(
      'namespace "team" contains at least one CSI volume "db". ' +
        "All CSI volumes in namespace must be deleted before it can be deleted",
    );
    expect(logLength(s)).toBe(before);
    expect((await call(s, "DELETE", "/v1/volume/csi/db?namespace=team")).status).toBe(200);
    expect((await call(s, "DELETE", "/v1/namespace/team")).status).toBe(200);
  });

  it("refuses a reader-only access mode when no controller supports read-only attach", async () => {
    const s = await startTestServer();
    running.push(s);
    const node = new TestNode(s);
    const controller = csiInfo("ebs", "controller", {
      ControllerInfo: {
        SupportsCreateDelete: false,
        SupportsAttachDetach: true,
        SupportsReadOnlyAttach: false,
      },
    });
    await node.register({
      CSIControllerPlugins: { ebs: controller },
      CSINodePlugins: { ebs: csiInfo("ebs", "node") },
    });
    await node.heartbeat();
    const ro = volumeBody("ro", {
      RequestedCapabilities: [{ AccessMode: "multi-node-reader-only", AttachmentMode: "file-system" }],
    });
    const res = await register(s, ro);
    expect(res.status).toBe(400);
    expect(String(res.body)).toContain("cannot serve access mode multi-node-reader-only");
    const create = await call(s, "PUT", "/v1/volume/csi/new/create", { Volumes: [volumeBody("new")] });
    expect(create.status).toBe(400);
    expect(String(create.body)).toContain("does not support creating volumes");
  });

  it("creates a volume as its plugin's controller would: the ExternalID, capacity and topologies recorded", async () => {
    const { s } = await setup();
    const res = await call(s, "PUT", "/v1/volume/csi/made/create", {
      Volumes: [
        volumeBody("made", {
          ExternalID: "",
          RequestedCapacityMin: 1_073_741_824,
          RequestedCapacityMax: 2_147_483_648,
          RequestedTopologies: { Required: [{ Segments: { zone: "a" } }], Preferred: null },
        }),
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.Volumes).toEqual([
      expect.objectContaining({
        ID: "made",
        ExternalID: "made",
        Capacity: 1_073_741_824,
        Topologies: [{ Segments: { zone: "a" } }],
      }),
    ]);
  });

  it("keeps CreateIndex on update, refuses updates while in use, and deregisters in use only with force once the allocation is terminal", async () => {
    const { s, nodes } = await setup();
    await register(s, volumeBody("db"));
    const created = (await call(s, "GET", "/v1/volume/csi/db")).body;
    await register(s, volumeBody("db", { Context: { a: "b" } }));
    const updated = (await call(s, "GET", "/v1/volume/csi/db")).body;
    expect(updated.CreateIndex).toBe(created.CreateIndex);
    expect(updated.ModifyIndex).toBeGreaterThan(created.ModifyIndex as number);

    const alloc = await placeAlloc(s, { NodeID: nodes[0]!.id });
    expect((await claim(s, "db", alloc.ID, nodes[0]!.id, CSI_CLAIM_STATE_TAKEN)).status).toBe("applied");
    const claimed = (await call(s, "GET", "/v1/volume/csi/db")).body;
    expect(claimed).toMatchObject({ WriteAllocs: { [alloc.ID]: null }, AccessMode: "single-node-writer" });
    expect((claimed.Allocations as { ID: string }[]).map((a) => a.ID)).toEqual([alloc.ID]);
    expect((await call(s, "GET", `/v1/volumes?type=csi&node_id=${nodes[0]!.id}`)).body).toHaveLength(1);
    expect((await call(s, "GET", `/v1/volumes?type=csi&node_id=${nodes[1]!.id}`)).body).toHaveLength(0);

    const before = logLength(s);
    const inUse = await register(s, volumeBody("db"));
    expect(inUse.status).toBe(409);
    expect(inUse.body).toBe("volume cannot be updated while in use");
    const plain = await call(s, "DELETE", "/v1/volume/csi/db");
    expect(plain.status).toBe(409);
    expect(plain.body).toBe("volume in use: db");
    expect((await call(s, "DELETE", "/v1/volume/csi/db?force=true")).status).toBe(409);
    expect(logLength(s)).toBe(before);

    // The allocation ends: on read its claim shows as a past claim being unpublished.
    await nodes[0]!.rpc("Node.UpdateAlloc", {
      Alloc: [{ ID: alloc.ID, NodeID: nodes[0]!.id, ClientStatus: "complete" }],
    });
    await waitUntil(() => allocRow(s, alloc.ID)?.ClientStatus === "complete");
    const ended = (await call(s, "GET", "/v1/volume/csi/db")).body;
    expect(ended.PastClaims).toMatchObject({ [alloc.ID]: { State: 4, NodeID: nodes[0]!.id } });
    expect((await call(s, "DELETE", "/v1/volume/csi/db?force=1")).status).toBe(200);
    expect((await call(s, "GET", "/v1/volume/csi/db")).status).toBe(404);
  });

  it("records every claim transition in the volume's history, with cause and actor", async () => {
    const { s, nodes } = await setup();
    await register(s, volumeBody("db"));
    const alloc = await placeAlloc(s, { NodeID: nodes[0]!.id });
    await claim(s, "db", alloc.ID, nodes[0]!.id, CSI_CLAIM_STATE_TAKEN);
    await claim(s, "db", alloc.ID, nodes[0]!.id, CSI_CLAIM_STATE_READY_TO_FREE);
    const history = await call(s, "GET", "/v1/volume/csi/db/history");
    expect(history.status).toBe(200);
    const claims = (
      history.body as {
        Field: string;
        From: unknown;
        To: unknown;
        Cause: { Event: string };
        Actor: { kind: string; id: string };
      }[]
    ).filter((e) => e.Field === "Claim");
    expect(
      claims.map((e) => [
        e.From && (e.From as { State: string }).State,
        e.To && (e.To as { State: string }).State,
      ]),
    ).toEqual([
      [null, "taken"],
      ["taken", null],
    ]);
    expect(claims[0]).toMatchObject({
      Cause: { Event: "CSIVolumeClaimsUpdated" },
      Actor: { kind: "node", id: nodes[0]!.id },
      To: { AllocationID: alloc.ID, Mode: "write" },
    });
    expect((await call(s, "GET", "/v1/volume/csi/nope/history")).status).toBe(404);
  });

  it("seals Secrets with the keyring: never in clear in the log, the event stream, history or the API", async () => {
    const { s } = await setup();
    const canary = `secret-canary-${randomUUID()}`;
    const registered = await register(s, volumeBody("db", { Secrets: { password: canary } }));
    expect(registered.status).toBe(200);
    const { frames } = await readStream(`${s.url}/v1/event/stream?topic=CSIVolume&index=0`, (f) =>
      f.some((x) => (x.Index ?? 0) >= registered.index),
    );
    const event = frames.flatMap((f) => f.Events ?? []).find((e) => e.Topic === "CSIVolume");
    expect(event).toMatchObject({
      Type: "CSIVolumeRegistered",
      Key: "db",
      Payload: { Volume: { ID: "db", Secrets: null } },
    });
    expect(JSON.stringify(frames)).not.toContain(canary);
    const row = s.store.table<CSIVolumeRow>("csi_volumes").get(csiVolumeKey("default", "db"))!;
    expect(row.SealedSecrets).not.toBeNull();
    expect(openVolumeSecrets(s.keyring, row.SealedSecrets)).toEqual({ password: canary });
    expect(JSON.stringify((await call(s, "GET", "/v1/volume/csi/db")).body)).not.toContain(canary);
    expect(JSON.stringify((await call(s, "GET", "/v1/volume/csi/db/history")).body)).not.toContain(canary);
    await s.close();
    for (const file of await filesUnder(s.dataDir)) {
      expect((await readFile(file)).includes(canary), file).toBe(false);
    }
  });
});

async function waitUntil(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}
