import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runReplay } from "../../src/cli/replay-command.ts";
import { filesUnder } from "../files-under.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { type AclToken, startAclServer } from "./acl-fixtures.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

/**
 * A cluster's ACL life in one run: bootstrap, policies, a role, tokens made
 * every way a token is made (create, update, role link, one-time token and
 * its exchange, deletion), so the log holds each ACL event type there is
 * outside of SSO. Answers every secret issued.
 */
async function aclHistory() {
  const acl = await startAclServer();
  running.push(acl.s);
  const secrets = [acl.root.SecretID];
  await acl.policy("readers", `namespace "default" { policy = "read" }`);
  await acl.policy("ops", `node { policy = "write" }\nagent { policy = "read" }`);
  const role = (await (
    await acl.write("/v1/acl/role", { Name: "ops", Policies: [{ Name: "ops" }] })
  ).json()) as {
    ID: string;
  };
  const reader = await acl.token(["readers"]);
  const withRole = (await (
    await acl.write("/v1/acl/token", { Type: "client", Policies: ["readers"], Roles: [{ ID: role.ID }] })
  ).json()) as AclToken;
  const management = (await (await acl.write("/v1/acl/token", { Type: "management" })).json()) as AclToken;
  secrets.push(reader.SecretID, withRole.SecretID, management.SecretID);
  await acl.write(`/v1/acl/token/${reader.AccessorID}`, { ...reader, Name: "renamed" });
  const once = (await (await acl.call(withRole.SecretID, "/v1/acl/token/onetime", "PUT")).json()) as {
    OneTimeToken: { OneTimeSecretID: string };
  };
  secrets.push(once.OneTimeToken.OneTimeSecretID);
  const exchanged = await acl.call(undefined, "/v1/acl/token/onetime/exchange", "PUT", {
    OneTimeSecretID: once.OneTimeToken.OneTimeSecretID,
  });
  expect(exchanged.status).toBe(200);
  await acl.write(`/v1/acl/token/${management.AccessorID}`, undefined, "DELETE");
  await acl.write("/v1/acl/policy/ops", undefined, "DELETE");
  return { acl, secrets };
}

describe("ACL events in the log", () => {
  it("hold no token secret: no file of the data dir contains one", async () => {
    const { acl, secrets } = await aclHistory();
    await acl.s.close();
    const files = await filesUnder(acl.s.dataDir);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const bytes = await readFile(file);
      for (const secret of secrets) {
        expect(bytes.includes(secret), `${secret} in ${file}`).toBe(false);
        expect(
          bytes.includes(Buffer.from(secret.replaceAll("-", ""), "hex")),
          `raw ${secret} in ${file}`,
        ).toBe(false);
      }
    }
  });

  it("replay into a fresh log rebuilds the same tables: same state hash at the same index", async () => {
    const { acl } = await aclHistory();
    const live = (await (await acl.call(acl.root.SecretID, "/v1/operator/state-hash")).json()) as {
      Index: number;
      Hash: string;
    };
    await acl.s.close();
    const target = join(acl.s.dataDir, "replayed");
    const out: string[] = [];
    const code = await runReplay(
      ["--from", `file:${join(acl.s.dataDir, "log")}`, "--to", `file:${join(target, "log")}`, "--verify"],
      { write: (chunk: string) => out.push(chunk) } as unknown as NodeJS.WritableStream,
    );
    expect(code, out.join("")).toBe(0);
    expect(out.join("")).toMatch(/verify: equal/);

    // A fresh server on the copy alone (no snapshot, no keystore) serves the same state.
    // Same (default) server name: a server back on its own log claims no new leadership.
    const fresh = await startTestServer({ dataDir: target, args: ["--acl-enabled"] });
    running.push(fresh);
    const replayed = (await (
      await fresh.call("/v1/operator/state-hash", { headers: { "X-Nomad-Token": acl.root.SecretID } })
    ).json()) as { Index: number; Hash: string };
    expect(replayed).toMatchObject({ Index: live.Index, Hash: live.Hash });
  });
});
