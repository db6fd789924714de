import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type AclServer, type AclToken, startAclServer } from "../../acl/acl-fixtures.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

async function start(args: string[] = []): Promise<AclServer> {
  const acl = await startAclServer(args);
  running.push(acl.s);
  return acl;
}

const READ_DEFAULT = `namespace "default" { policy = "read" }`;

describe("ACL bootstrap", () => {
  it("bootstraps once; a second bootstrap names the reset index, and the reset file allows one more", async () => {
    const { s, root, call } = await start();
    expect(root).toMatchObject({ Name: "Bootstrap Token", Type: "management" });
    expect(root.SecretID).toMatch(/^[0-9a-f-]{36}$/);

    const before = s.log.lastIndex();
    const again = await call(undefined, "/v1/acl/bootstrap", "PUT");
    expect(again.status).toBe(400);
    expect(await again.text()).toBe(`ACL bootstrap already done (reset index: ${root.CreateIndex})`);
    expect(s.log.lastIndex()).toBe(before);

    await mkdir(join(s.dataDir, "server"), { recursive: true });
    await writeFile(join(s.dataDir, "server", "acl-bootstrap-reset"), `${root.CreateIndex + 7}\n`);
    const wrong = await call(undefined, "/v1/acl/bootstrap", "PUT");
    expect(await wrong.text()).toBe(
      `Invalid bootstrap reset index (specified ${root.CreateIndex + 7}, reset index: ${root.CreateIndex})`,
    );

    await writeFile(join(s.dataDir, "server", "acl-bootstrap-reset"), String(root.CreateIndex));
    const reset = await call(undefined, "/v1/acl/bootstrap", "PUT");
    expect(reset.status, await reset.clone().text()).toBe(200);
    const second = (await reset.json()) as AclToken;
    expect(second.AccessorID).not.toBe(root.AccessorID);
    // Both bootstrap tokens are management tokens now; the reset index moved on.
    const self = await call(second.SecretID, "/v1/acl/token/self");
    expect(((await self.json()) as AclToken).AccessorID).toBe(second.AccessorID);
    // The file still names the old index: Nomad reads it as a reset request that no longer matches.
    const third = await call(undefined, "/v1/acl/bootstrap", "PUT");
    expect(await third.text()).toBe(
      `Invalid bootstrap reset index (specified ${root.CreateIndex}, reset index: ${second.CreateIndex})`,
    );
  });

  it("takes the operator's BootstrapSecret, and refuses one that is not a UUID", async () => {
    const s = await startTestServer({ args: ["--acl-enabled"] });
    running.push(s);
    const bad = await s.call("/v1/acl/bootstrap", {
      method: "POST",
      body: JSON.stringify({ BootstrapSecret: "badtoken" }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toBe("invalid acl token");
    const secret = "2b778dd9-f5f1-6f29-b4b4-9a5fa948757a";
    const ok = await s.call("/v1/acl/bootstrap", {
      method: "POST",
      body: JSON.stringify({ BootstrapSecret: secret }),
    });
    expect(((await ok.json()) as AclToken).SecretID).toBe(secret);
    const jobs = await s.call("/v1/jobs", { headers: { "X-Nomad-Token": secret } });
    expect(jobs.status).toBe(200);
  });

  it("answers 400 ACL support disabled on every ACL route while ACLs are off", async () => {
    const s = await startTestServer();
    running.push(s);
    for (const [method, path] of [
      ["POST", "/v1/acl/bootstrap"],
      ["GET", "/v1/acl/tokens"],
      ["GET", "/v1/acl/policies"],
      ["GET", "/v1/acl/token/self"],
    ] as const) {
      const res = await s.call(path, { method });
      expect(res.status, path).toBe(400);
      expect(await res.text()).toBe("ACL support disabled");
    }
  });
});

describe("ACL tokens", () => {
  it("creates, reads, lists, updates and deletes a token, showing its secret only to its owner", async () => {
    const acl = await start();
    await acl.policy("readers", READ_DEFAULT);
    const token = await acl.token(["readers"], { Name: "reader" });
    expect(token).toMatchObject({ Name: "reader", Type: "client", Policies: ["readers"], ExpirationTTL: "" });

    const asRoot = (await (
      await acl.call(acl.root.SecretID, `/v1/acl/token/${token.AccessorID}`)
    ).json()) as AclToken;
    expect(asRoot.SecretID).toBe("");
    expect(asRoot.AccessorID).toBe(token.AccessorID);
    const own = (await (
      await acl.call(token.SecretID, `/v1/acl/token/${token.AccessorID}`)
    ).json()) as AclToken;
    expect(own.SecretID).toBe(token.SecretID);
    expect(await (await acl.call(token.SecretID, "/v1/acl/token/self")).json()).toEqual(token);
    // Someone else's token: management only.
    expect((await acl.call(token.SecretID, `/v1/acl/token/${acl.root.AccessorID}`)).status).toBe(403);

    const list = (await (await acl.call(acl.root.SecretID, "/v1/acl/tokens")).json()) as AclToken[];
    expect(list.map((t) => t.AccessorID)).toEqual([acl.root.AccessorID, token.AccessorID]);
    expect(list.every((t) => !("SecretID" in t))).toBe(true);
    expect((await acl.call(token.SecretID, "/v1/acl/tokens")).status).toBe(403);

    const updated = await acl.write(`/v1/acl/token/${token.AccessorID}`, { ...token, Name: "renamed" });
    expect(((await updated.json()) as AclToken).Name).toBe("renamed");
    // The secret did not change with the update.
    expect((await acl.call(token.SecretID, "/v1/jobs")).status).toBe(200);

    await acl.write(`/v1/acl/token/${token.AccessorID}`, undefined, "DELETE");
    const gone = await acl.call(token.SecretID, "/v1/jobs");
    expect(gone.status).toBe(403);
    expect(await gone.text()).toBe("Permission denied");
    // Nomad's ACL.ResolveToken answers a secret that resolves to nothing with its 404.
    expect((await acl.call(token.SecretID, "/v1/acl/token/self")).status).toBe(404);
  });

  it("refuses bad tokens with Nomad's words and writes nothing", async () => {
    const acl = await start();
    const before = acl.s.log.lastIndex();
    const cases: [unknown, string][] = [
      [{ Type: "client" }, "client token missing policies or roles"],
      [
        { Type: "management", Policies: ["x"] },
        "management token cannot be associated with policies or roles",
      ],
      [{ Type: "other", Policies: ["x"] }, "token type must be client or management"],
      [{ Type: "client", Policies: ["x"], Name: "n".repeat(257) }, "token name too long"],
      [
        { Type: "client", Policies: ["x"], ExpirationTTL: "10s" },
        "expiration time cannot be less than 1m0s in the future",
      ],
      [
        { Type: "client", Policies: ["x"], ExpirationTTL: "48h" },
        "expiration time cannot be more than 24h0m0s in the future",
      ],
      [{ Type: "client", Roles: [{ Name: "missing" }] }, "cannot find role missing"],
      [{ Type: "client", Policies: ["x"], ExpirationTTL: "soon" }, 'time: invalid duration "soon"'],
    ];
    for (const [body, message] of cases) {
      const res = await acl.call(acl.root.SecretID, "/v1/acl/token", "PUT", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.text()).toContain(message);
    }
    // Nomad's upsertTokens does not look policies up: a missing one is accepted and grants nothing.
    const dangling = await acl.token(["does-not-exist"]);
    expect((await acl.call(dangling.SecretID, "/v1/jobs")).status).toBe(403);
    expect(acl.s.log.lastIndex()).toBe(before + 1);
  });

  it("resolves role links by name, drops links to deleted roles on read, and applies the roles' policies", async () => {
    const acl = await start();
    await acl.policy("readers", READ_DEFAULT);
    const role = (await (
      await acl.write("/v1/acl/role", { Name: "ops", Policies: [{ Name: "readers" }] })
    ).json()) as { ID: string };
    const token = (await (
      await acl.write("/v1/acl/token", { Type: "client", Roles: [{ Name: "ops" }, { ID: role.ID }] })
    ).json()) as AclToken;
    expect(token.Roles).toEqual([{ ID: role.ID, Name: "ops" }]);
    expect((await acl.call(token.SecretID, "/v1/jobs")).status).toBe(200);

    await acl.write(`/v1/acl/role/${role.ID}`, undefined, "DELETE");
    const read = (await (
      await acl.call(acl.root.SecretID, `/v1/acl/token/${token.AccessorID}`)
    ).json()) as AclToken;
    expect(read.Roles).toEqual([]);
    expect((await acl.call(token.SecretID, "/v1/jobs")).status).toBe(403);
  });

  it("exchanges a one-time token once for its token, secret included", async () => {
    const acl = await start();
    await acl.policy("readers", READ_DEFAULT);
    const token = await acl.token(["readers"]);
    const once = (await (await acl.call(token.SecretID, "/v1/acl/token/onetime", "PUT")).json()) as {
      OneTimeToken: { OneTimeSecretID: string; AccessorID: string };
    };
    expect(once.OneTimeToken.AccessorID).toBe(token.AccessorID);
    const body = { OneTimeSecretID: once.OneTimeToken.OneTimeSecretID };
    const exchanged = await acl.call(undefined, "/v1/acl/token/onetime/exchange", "PUT", body);
    expect(exchanged.status).toBe(200);
    expect(((await exchanged.json()) as { Token: AclToken }).Token).toEqual(token);
    const twice = await acl.call(undefined, "/v1/acl/token/onetime/exchange", "PUT", body);
    expect(twice.status).toBe(403);
    // The anonymous caller has no token to stand for.
    expect((await acl.call(undefined, "/v1/acl/token/onetime", "PUT")).status).toBe(403);
  });

  it("refuses an expired token at once and collects it, with its reason in the audit trail", async () => {
    const acl = await start(["--acl-token-min-expiration-ttl", "1s"]);
    await acl.policy("readers", READ_DEFAULT);
    const token = await acl.token(["readers"], { ExpirationTTL: "1s" });
    expect(token.ExpirationTTL).toBe("1s");
    expect(token.ExpirationTime).toBeDefined();
    expect((await acl.call(token.SecretID, "/v1/jobs")).status).toBe(200);
    let status = 200;
    for (let i = 0; i < 60 && status === 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await acl.call(token.SecretID, "/v1/jobs")).status;
    }
    expect(status).toBe(403);
    let listed = true;
    for (let i = 0; i < 60 && listed; i++) {
      const list = (await (await acl.call(acl.root.SecretID, "/v1/acl/tokens")).json()) as AclToken[];
      listed = list.some((t) => t.AccessorID === token.AccessorID);
      if (listed) await new Promise((r) => setTimeout(r, 100));
    }
    expect(listed).toBe(false);
    const history = (await (
      await acl.call(acl.root.SecretID, `/v1/acl/token/${token.AccessorID}/history`)
    ).json()) as {
      Field: string;
      Cause: { Event: string; Reason?: string };
      Actor: { kind: string; id: string };
    }[];
    expect(history[0]).toMatchObject({
      Field: "(created)",
      Actor: { kind: "token", id: acl.root.AccessorID },
    });
    expect(history.at(-1)).toMatchObject({
      Field: "(deleted)",
      Cause: { Event: "ACLTokensDeleted", Reason: "expired" },
      Actor: { kind: "server" },
    });
  });

  it("answers WhoAmI with the identity the request was authenticated as", async () => {
    const acl = await start();
    const me = (await (await acl.call(acl.root.SecretID, "/v1/acl/whoami")).json()) as {
      Identity: { ACLToken: AclToken };
    };
    expect(me.Identity.ACLToken.AccessorID).toBe(acl.root.AccessorID);
    const anon = (await (await acl.call(undefined, "/v1/acl/whoami")).json()) as {
      Identity: { ACLToken: AclToken };
    };
    expect(anon.Identity.ACLToken.AccessorID).toBe("anonymous");
    const bogus = await acl.call("00000000-0000-4000-8000-000000000000", "/v1/acl/whoami");
    expect(bogus.status).toBe(403);
    expect(await bogus.text()).toBe("ACL token not found");
  });
});
