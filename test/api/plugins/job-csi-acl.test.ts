import { afterEach, describe, expect, it } from "vitest";
import { type AclServer, startAclServer } from "../../acl/acl-fixtures.ts";

const servers: AclServer[] = [];
afterEach(async () => {
  for (const a of servers.splice(0)) await a.s.stop();
});

const job = (id: string, volumes: Record<string, unknown> | null) => ({
  ID: id,
  TaskGroups: [
    {
      Name: "g",
      ...(volumes ? { Volumes: volumes } : {}),
      Tasks: [{ Name: "t", Driver: "docker", Resources: { CPU: 100, MemoryMB: 64 } }],
    },
  ],
});

const CSI = {
  data: {
    Name: "data",
    Type: "csi",
    Source: "data",
    AccessMode: "single-node-writer",
    AttachmentMode: "file-system",
  },
};

describe("registering a job with CSI volumes under ACLs (Nomad's allowCSIMount)", () => {
  it("needs csi-mount-volume in the namespace and plugin read besides submit-job", async () => {
    const a = await startAclServer();
    servers.push(a);
    await a.policy("submit", 'namespace "default" { capabilities = ["submit-job"] }');
    await a.policy("mount", 'namespace "default" { capabilities = ["csi-mount-volume"] }');
    await a.policy("plugins", 'plugin { policy = "read" }');
    const submitter = await a.token(["submit"]);
    const noPlugin = await a.token(["submit", "mount"]);
    const mounter = await a.token(["submit", "mount", "plugins"]);

    expect((await a.call(submitter.SecretID, "/v1/jobs", "PUT", { Job: job("plain", null) })).status).toBe(
      200,
    );
    for (const t of [submitter, noPlugin]) {
      expect((await a.call(t.SecretID, "/v1/jobs", "PUT", { Job: job("web", CSI) })).status).toBe(403);
    }
    const res = await a.call(mounter.SecretID, "/v1/jobs", "PUT", { Job: job("web", CSI) });
    expect(res.status, await res.clone().text()).toBe(200);
  });
});
