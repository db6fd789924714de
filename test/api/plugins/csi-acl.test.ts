import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AclServer, startAclServer } from "../../acl/acl-fixtures.ts";
import { csiInfo } from "../../projections/csi-fixtures.ts";
import { TestNode } from "../node-fixtures.ts";

const volume = (id: string) => ({
  ID: id,
  PluginID: "ebs",
  RequestedCapabilities: [{ AccessMode: "single-node-writer", AttachmentMode: "file-system" }],
});

describe("CSI volumes and plugins under ACLs (Nomad's csi_endpoint.go checks)", () => {
  let acl: AclServer;
  const tokens: Record<string, string> = {};
  const status = async (who: string | undefined, path: string, method = "GET", body?: unknown) =>
    (await acl.call(who === undefined ? undefined : tokens[who], path, method, body)).status;

  beforeAll(async () => {
    acl = await startAclServer();
    const node = new TestNode(acl.s);
    const csi = {
      CSIControllerPlugins: { ebs: csiInfo("ebs", "controller") },
      CSINodePlugins: { ebs: csiInfo("ebs", "node") },
    };
    expect((await node.register(csi)).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    await acl.write("/v1/volumes", { Volumes: [volume("db")] });
    const policies: Record<string, string> = {
      lister: `namespace "default" { capabilities = ["csi-list-volume"] }`,
      reader: `namespace "default" { capabilities = ["csi-read-volume"] }`,
      jobReader: `namespace "default" { capabilities = ["read-job"] }`,
      writer: `namespace "default" { capabilities = ["csi-write-volume"] }`,
      writerWithPlugins: `namespace "default" { capabilities = ["csi-write-volume"] }\nplugin { policy = "read" }`,
      pluginList: `plugin { policy = "list" }`,
    };
    for (const [name, rules] of Object.entries(policies)) {
      await acl.policy(name, rules);
      tokens[name] = (await acl.token([name])).SecretID;
    }
  }, 60_000);

  afterAll(async () => {
    await acl?.s.stop();
  });

  it("lists volumes with a CSI or job list capability only", async () => {
    expect(await status(undefined, "/v1/volumes?type=csi")).toBe(403);
    // Nomad answers before any check without type=csi.
    expect(await status(undefined, "/v1/volumes")).toBe(200);
    expect(await status("writer", "/v1/volumes?type=csi")).toBe(403);
    expect(await status("lister", "/v1/volumes?type=csi")).toBe(200);
    expect(await status("reader", "/v1/volumes?type=csi")).toBe(200);
  });

  it("reads a volume and its history with csi-read-volume, csi-mount-volume or read-job", async () => {
    expect(await status("lister", "/v1/volume/csi/db")).toBe(403);
    expect(await status("reader", "/v1/volume/csi/db")).toBe(200);
    expect(await status("jobReader", "/v1/volume/csi/db")).toBe(200);
    expect(await status("lister", "/v1/volume/csi/db/history")).toBe(403);
    expect(await status("reader", "/v1/volume/csi/db/history")).toBe(200);
  });

  it("registers with csi-write-volume and plugin read together, and deregisters with csi-write-volume", async () => {
    const body = { Volumes: [volume("web")] };
    expect(await status("reader", "/v1/volume/csi/web", "PUT", body)).toBe(403);
    expect(await status("writer", "/v1/volume/csi/web", "PUT", body)).toBe(403);
    expect(await status("writerWithPlugins", "/v1/volume/csi/web", "PUT", body)).toBe(200);
    expect(await status("reader", "/v1/volume/csi/web", "DELETE")).toBe(403);
    expect(await status("writer", "/v1/volume/csi/web", "DELETE")).toBe(200);
  });

  it("lists plugins with plugin list and reads one with plugin read", async () => {
    expect(await status("reader", "/v1/plugins?type=csi")).toBe(403);
    expect(await status("reader", "/v1/plugins")).toBe(200);
    expect(await status("pluginList", "/v1/plugins?type=csi")).toBe(200);
    expect(await status("pluginList", "/v1/plugin/csi/ebs")).toBe(403);
    expect(await status("writerWithPlugins", "/v1/plugin/csi/ebs")).toBe(200);
  });
});
