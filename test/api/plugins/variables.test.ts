import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { indexOf, type VariableJson, variablesClient } from "./variables-fixtures.ts";

let s: TestServer;
let v: ReturnType<typeof variablesClient>;

beforeAll(async () => {
  s = await startTestServer();
  v = variablesClient(s);
});
afterAll(async () => {
  await s?.stop();
});

/** Runs `fn` and checks that it appended nothing to the log. */
async function appendsNothing(fn: () => Promise<void>): Promise<void> {
  const before = s.log.lastIndex();
  await fn();
  await s.store.caughtUp();
  expect(s.log.lastIndex()).toBe(before);
}

describe("/v1/var/<path> without ACLs", () => {
  it("writes, reads, updates and deletes a variable whose path holds slashes", async () => {
    const created = await v.put("app/db/creds", {
      Path: "ignored",
      Items: { user: "admin", pass: "s3cret" },
    });
    expect(created.status).toBe(200);
    const first = (await created.json()) as VariableJson;
    expect(first).toEqual({
      Namespace: "default",
      Path: "app/db/creds",
      CreateIndex: indexOf(created),
      CreateTime: expect.any(Number),
      ModifyIndex: indexOf(created),
      ModifyTime: first.CreateTime,
      Items: { user: "admin", pass: "s3cret" },
    });
    expect(first.CreateTime).toBeGreaterThan(1e18);

    const read = await v.get("app/db/creds");
    expect(read.status).toBe(200);
    expect(indexOf(read)).toBe(first.ModifyIndex);
    expect(await read.json()).toEqual(first);

    const updated = await v.set("app/db/creds", { user: "admin", pass: "rotated" }, "");
    expect(updated.status).toBe(200);
    const second = (await updated.json()) as VariableJson;
    expect(second).toMatchObject({ CreateIndex: first.CreateIndex, CreateTime: first.CreateTime });
    expect(second.ModifyIndex).toBe(indexOf(updated));
    expect(second.ModifyIndex).toBeGreaterThan(first.ModifyIndex);
    expect(((await (await v.get("app/db/creds")).json()) as VariableJson).Items).toEqual({
      user: "admin",
      pass: "rotated",
    });

    const deleted = await v.del("app/db/creds");
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe("");
    expect(indexOf(deleted)).toBeGreaterThan(second.ModifyIndex);
    const missing = await v.get("app/db/creds");
    expect(missing.status).toBe(404);
    expect(await missing.text()).toBe("variable not found");
  });

  it("takes the namespace from the body, else ?namespace=, else default", async () => {
    await s.call("/v1/namespace/team", { method: "PUT", body: JSON.stringify({ Name: "team" }) });
    expect((await v.put("ns/body", { Namespace: "team", Items: { a: "1" } })).status).toBe(200);
    expect((await v.set("ns/query", { a: "1" }, "?namespace=team")).status).toBe(200);
    expect((await v.get("ns/body")).status).toBe(404);
    expect((await v.get("ns/body", "?namespace=team")).status).toBe(200);
    expect((await v.get("ns/query", "?namespace=team")).status).toBe(200);
    expect((await v.del("ns/body", "?namespace=team")).status).toBe(204);
    expect((await v.del("ns/query", "?namespace=team")).status).toBe(204);
  });

  it("answers every check-and-set conflict 409 with the variable that won, indexed by its ModifyIndex", async () => {
    const made = await v.set("cas/a", { k: "one" }, "?cas=0");
    expect(made.status).toBe(200);
    const current = (await made.json()) as VariableJson;

    await appendsNothing(async () => {
      for (const cas of [0, current.ModifyIndex - 1, current.ModifyIndex + 100]) {
        const res = await v.set("cas/a", { k: "two" }, `?cas=${cas}`);
        expect(res.status, `cas=${cas}`).toBe(409);
        expect(indexOf(res)).toBe(current.ModifyIndex);
        expect(await res.json()).toEqual(current);
      }
      // Expecting a variable that is not there: Nomad's zero value.
      const absent = await v.set("cas/none", { k: "x" }, "?cas=5");
      expect(absent.status).toBe(409);
      expect(absent.headers.get("x-nomad-index")).toBe("0");
      expect(await absent.json()).toEqual({
        Namespace: "default",
        Path: "cas/none",
        CreateIndex: 0,
        CreateTime: 0,
        ModifyIndex: 0,
        ModifyTime: 0,
        Items: null,
      });
    });

    const won = await v.set("cas/a", { k: "two" }, `?cas=${current.ModifyIndex}`);
    expect(won.status).toBe(200);
    const next = (await won.json()) as VariableJson;
    expect(next.Items).toEqual({ k: "two" });

    await appendsNothing(async () => {
      for (const cas of [0, current.ModifyIndex]) {
        const res = await v.del("cas/a", `?cas=${cas}`);
        expect(res.status, `delete cas=${cas}`).toBe(409);
        expect(indexOf(res)).toBe(next.ModifyIndex);
        expect(await res.json()).toEqual(next);
      }
      const absent = await v.del("cas/none", "?cas=9");
      expect(absent.status).toBe(409);
      expect(((await absent.json()) as VariableJson).ModifyIndex).toBe(0);
    });
    // Delete-if-absent of what is absent succeeds.
    expect((await v.del("cas/none", "?cas=0")).status).toBe(204);
    expect((await v.del("cas/a", `?cas=${next.ModifyIndex}`)).status).toBe(204);
    expect((await v.get("cas/a")).status).toBe(404);
  });

  it("lets exactly one of 32 concurrent writers with the same cas win; the rest get the winner", async () => {
    const base = (await (await v.set("race/x", { n: "start" })).json()) as VariableJson;
    const answers = await Promise.all(
      Array.from({ length: 32 }, (_, i) => v.set("race/x", { n: String(i) }, `?cas=${base.ModifyIndex}`)),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((c) => c === 200)).toHaveLength(1);
    expect(statuses.filter((c) => c === 409)).toHaveLength(31);
    const winner = (await answers.find((r) => r.status === 200)!.json()) as VariableJson;
    for (const loser of answers.filter((r) => r.status === 409)) {
      expect(indexOf(loser)).toBe(winner.ModifyIndex);
      expect(await loser.json()).toEqual(winner);
    }
    expect(((await (await v.get("race/x")).json()) as VariableJson).Items).toEqual(winner.Items);
  });

  it("refuses bad input with a 4xx naming the problem, and appends nothing", async () => {
    const cases: [() => Promise<Response>, number, string | RegExp][] = [
      [() => v.put("bad/a", {}), 400, "variable missing required Items object"],
      [() => v.put("bad/a", { Items: {} }), 400, "variable missing required Items object"],
      [() => v.put("bad/a", null), 400, "variable missing required Items object"],
      [() => v.put("bad/a", { Items: { n: 1 } }), 400, /Items.*string/],
      [() => v.set("bad/a", { k: "x".repeat(65536) }), 400, "variables are limited to 64KiB in total size"],
      [() => v.set("bad.a", { k: "v" }), 400, 'invalid path "bad.a"'],
      [() => v.set("nomad", { k: "v" }), 400, /^"nomad" is a reserved top-level directory path/],
      [() => v.set("nomad/other", { k: "v" }), 400, /^only paths at "nomad\/jobs"/],
      [
        () => v.put("bad/a", { Namespace: "*", Items: { k: "v" } }),
        400,
        'can not target wildcard ("*")namespace',
      ],
      [
        () => v.set("bad/a", { k: "v" }, "?cas=abc"),
        400,
        /^can not parse cas: strconv.ParseUint: parsing "abc"/,
      ],
      [() => v.del("bad/a", "?cas=-1"), 400, /invalid syntax/],
      [() => v.del("bad/a", "?namespace=*"), 400, 'can not target wildcard ("*")namespace'],
      [() => s.call("/v1/var/bad/a", { method: "PUT", body: "{nope" }), 400, /^invalid JSON body/],
      [() => v.get(""), 400, "missing variable path"],
      [() => v.set("", { k: "v" }), 400, "missing variable path"],
      [() => v.del(""), 400, "missing variable path"],
    ];
    await appendsNothing(async () => {
      for (const [call, status, text] of cases) {
        const res = await call();
        const body = await res.text();
        expect(res.status, body).toBe(status);
        if (typeof text === "string") expect(body).toBe(text);
        else expect(body).toMatch(text);
      }
    });
    // Exactly at the limit is allowed.
    const limit = await v.set("bad/limit", { k: "x".repeat(65535) });
    expect(limit.status).toBe(200);
    expect((await v.del("bad/limit")).status).toBe(204);
  });

  it("answers other methods as the rest of the API does", async () => {
    expect((await s.call("/v1/var/a", { method: "PATCH" })).status).toBe(405);
    expect((await s.call("/v1/vars", { method: "PUT" })).status).toBe(405);
  });
});

describe("GET /v1/vars", () => {
  let stubs: VariableJson[];
  beforeAll(async () => {
    await s.call("/v1/namespace/other", { method: "PUT", body: JSON.stringify({ Name: "other" }) });
    for (const path of ["list/b", "list/a", "list/c/d", "listz"])
      await v.set(path, { secret: `value-of-${path}` });
    await v.set("list/a", { secret: "x" }, "?namespace=other");
    stubs = (await (await v.list("?prefix=list/")).json()) as VariableJson[];
  });

  it("lists metadata only, never items, key or data, in path order", async () => {
    expect(stubs.map((x) => x.Path)).toEqual(["list/a", "list/b", "list/c/d"]);
    for (const stub of stubs) {
      expect(Object.keys(stub).sort()).toEqual(
        ["CreateIndex", "CreateTime", "ModifyIndex", "ModifyTime", "Namespace", "Path"].sort(),
      );
    }
    const res = await v.list();
    expect(indexOf(res)).toBe(s.store.table("variables").index);
    expect(await res.text()).not.toContain("value-of");
  });

  it("reads one namespace, or all with *", async () => {
    const other = (await (await v.list("?namespace=other")).json()) as VariableJson[];
    expect(other.map((x) => `${x.Namespace}/${x.Path}`)).toEqual(["other/list/a"]);
    const all = (await (await v.list("?namespace=*&prefix=list/a")).json()) as VariableJson[];
    expect(all.map((x) => `${x.Namespace}/${x.Path}`)).toEqual(["default/list/a", "other/list/a"]);
    const none = await v.list("?namespace=nowhere");
    expect(await none.json()).toEqual([]);
  });

  it("pages with Namespace.Path tokens and filters on the metadata", async () => {
    const first = await v.list("?prefix=list/&per_page=2");
    expect(((await first.json()) as VariableJson[]).map((x) => x.Path)).toEqual(["list/a", "list/b"]);
    expect(first.headers.get("x-nomad-nexttoken")).toBe("default.list/c/d");
    const second = await v.list("?prefix=list/&per_page=2&next_token=default.list/c/d");
    expect(((await second.json()) as VariableJson[]).map((x) => x.Path)).toEqual(["list/c/d"]);
    expect(second.headers.get("x-nomad-nexttoken")).toBeNull();

    const filtered = await v.list(`?namespace=*&filter=${encodeURIComponent('Path matches "^list/[ab]$"')}`);
    expect(((await filtered.json()) as VariableJson[]).map((x) => `${x.Namespace}/${x.Path}`)).toEqual([
      "default/list/a",
      "default/list/b",
      "other/list/a",
    ]);
    const reversed = await v.list("?prefix=list/&reverse=true");
    expect(((await reversed.json()) as VariableJson[]).map((x) => x.Path)).toEqual([
      "list/c/d",
      "list/b",
      "list/a",
    ]);
    const bad = await v.list(`?filter=${encodeURIComponent("Path ==")}`);
    expect(bad.status).toBe(400);
  });

  it("waits as a blocking query until a variable changes", async () => {
    const res = await v.get("list/a");
    const index = indexOf(res);
    const waiting = v.get("list/a", `?index=${index}&wait=20s`);
    await v.set("list/a", { secret: "changed" });
    const woken = await waiting;
    expect(indexOf(woken)).toBeGreaterThan(index);
    expect(((await woken.json()) as VariableJson).Items).toEqual({ secret: "changed" });
  });

  it("reads a variable and the list as they were at an index", async () => {
    const first = (await (await v.set("past/x", { v: "1" })).json()) as VariableJson;
    await v.set("past/x", { v: "2" });
    const then = await v.get("past/x", `?at_index=${first.ModifyIndex}`);
    expect(then.status).toBe(200);
    expect(then.headers.get("x-chronomad-at-index")).toBe(String(first.ModifyIndex));
    expect(((await then.json()) as VariableJson).Items).toEqual({ v: "1" });
    expect((await v.get("past/x", `?at_index=${first.ModifyIndex - 1}`)).status).toBe(404);
    const listed = (await (
      await v.list(`?prefix=past/&at_index=${first.ModifyIndex - 1}`)
    ).json()) as unknown[];
    expect(listed).toEqual([]);
  });
});

describe("namespace deletion", () => {
  it("is refused while the namespace holds a variable, in Nomad's words, and nothing is appended", async () => {
    await s.call("/v1/namespace/doomed", { method: "PUT", body: JSON.stringify({ Name: "doomed" }) });
    await v.set("keep/me", { k: "v" }, "?namespace=doomed");
    await appendsNothing(async () => {
      const refused = await s.call("/v1/namespace/doomed", { method: "DELETE" });
      expect(refused.status).toBe(400);
      expect(await refused.text()).toBe(
        'namespace "doomed" contains at least one variable. All variables in namespace must be deleted before it can be deleted',
      );
    });
    expect((await v.del("keep/me", "?namespace=doomed")).status).toBe(204);
    expect((await s.call("/v1/namespace/doomed", { method: "DELETE" })).status).toBe(200);
  });
});
