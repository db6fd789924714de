import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AclServer, startAclServer } from "../../acl/acl-fixtures.ts";
import { indexOf, type VariableJson, variablesClient } from "./variables-fixtures.ts";

let acl: AclServer;
let root: ReturnType<typeof variablesClient>;
/** read and list under app/*; write, read, list and destroy on app/rw. */
let reader: ReturnType<typeof variablesClient>;
/** write (only) under drop/*. */
let writer: ReturnType<typeof variablesClient>;
let anonymous: ReturnType<typeof variablesClient>;

beforeAll(async () => {
  acl = await startAclServer();
  root = variablesClient(acl.s, acl.root.SecretID);
  anonymous = variablesClient(acl.s);
  await acl.policy(
    "app-reader",
    `namespace "default" {
  variables {
    path "app/*" { capabilities = ["read", "list"] }
    path "app/rw" { capabilities = ["write", "read", "list", "destroy"] }
  }
}`,
  );
  await acl.policy(
    "drop-writer",
    `namespace "default" {
  variables {
    path "drop/*" { capabilities = ["write"] }
  }
}`,
  );
  reader = variablesClient(acl.s, (await acl.token(["app-reader"])).SecretID);
  writer = variablesClient(acl.s, (await acl.token(["drop-writer"])).SecretID);
  for (const path of ["app/a", "app/b", "app/rw", "private/x", "drop/box"]) {
    expect((await root.set(path, { secret: path })).status).toBe(200);
  }
}, 60_000);

afterAll(async () => {
  await acl?.s.stop();
});

describe("variables under ACLs", () => {
  it("reads only the paths a policy grants read on, 403 before the lookup otherwise", async () => {
    const ok = await reader.get("app/a");
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as VariableJson).Items).toEqual({ secret: "app/a" });
    expect((await reader.get("private/x")).status).toBe(403);
    // Absent or present, a path without read is the same 403.
    expect((await reader.get("private/none")).status).toBe(403);
    expect((await reader.get("app/none")).status).toBe(404);
    expect((await anonymous.get("app/a")).status).toBe(403);
    expect((await acl.call("not-a-token-at-all", "/v1/var/app/a")).status).toBe(403);
  });

  it("lists only the paths the caller may list, in any namespace asked", async () => {
    const listed = (await (await reader.list()).json()) as VariableJson[];
    expect(listed.map((v) => v.Path)).toEqual(["app/a", "app/b", "app/rw"]);
    const all = (await (await reader.list("?namespace=*")).json()) as VariableJson[];
    expect(all.map((v) => v.Path)).toEqual(["app/a", "app/b", "app/rw"]);
    // Write alone grants no list.
    expect(await (await writer.list()).json()).toEqual([]);
    const none = await anonymous.list();
    expect(none.status).toBe(200);
    expect(await none.json()).toEqual([]);
    const everything = (await (await root.list()).json()) as VariableJson[];
    expect(everything).toHaveLength(5);
  });

  it("writes with write and deletes with destroy, each on its own path", async () => {
    const before = acl.s.log.lastIndex();
    expect((await reader.set("app/a", { secret: "mine" })).status).toBe(403);
    expect((await reader.del("app/a")).status).toBe(403);
    expect((await writer.del("drop/box")).status).toBe(403);
    expect((await anonymous.set("drop/new", { k: "v" })).status).toBe(403);
    expect(acl.s.log.lastIndex()).toBe(before);

    const written = await reader.set("app/rw", { secret: "rewritten" });
    expect(written.status).toBe(200);
    // The writer may read back its own write: Output carries its items.
    expect(((await written.json()) as VariableJson).Items).toEqual({ secret: "rewritten" });
    expect((await writer.set("drop/new", { k: "v" })).status).toBe(200);
    expect((await reader.del("app/rw")).status).toBe(204);
    expect((await root.set("app/rw", { secret: "app/rw" })).status).toBe(200);
  });

  it("redacts the items of a conflict the caller may not read, and shows them to one who may", async () => {
    const current = (await (await root.get("drop/box")).json()) as VariableJson;
    const redacted = await writer.set("drop/box", { k: "overwrite" }, "?cas=0");
    expect(redacted.status).toBe(409);
    expect(indexOf(redacted)).toBe(current.ModifyIndex);
    expect(await redacted.json()).toEqual({ ...current, Items: null });

    const shown = await reader.set("app/rw", { k: "overwrite" }, "?cas=0");
    expect(shown.status).toBe(409);
    expect(((await shown.json()) as VariableJson).Items).toEqual({ secret: "app/rw" });
  });

  it("checks the write before it validates, as Nomad's svePreApply does", async () => {
    // A path nobody may write and that is invalid too: the ACL answers first.
    expect((await reader.set("nomad", { k: "v" })).status).toBe(403);
    expect((await root.set("nomad", { k: "v" })).status).toBe(400);
  });
});
