import { afterEach, describe, expect, it } from "vitest";
import { startAclServer } from "../../acl/acl-fixtures.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { indexOf, variablesClient } from "./variables-fixtures.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

interface SearchBody {
  Matches: Record<string, string[] | null>;
  Truncations: Record<string, boolean>;
  Index: number;
}

interface FuzzyBody {
  Matches: Record<string, { ID: string; Scope?: string[] }[]>;
  Truncations: Record<string, boolean>;
  Index: number;
}

function searcher(s: TestServer, token?: string) {
  const post = async <B>(path: string, body: unknown, query = "") => {
    const res = await s.call(`${path}${query}`, {
      method: "PUT",
      headers: token === undefined ? {} : { "X-Nomad-Token": token },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, index: indexOf(res), text, body: (res.ok ? JSON.parse(text) : {}) as B };
  };
  return {
    prefix: (body: unknown, query = "") => post<SearchBody>("/v1/search", body, query),
    fuzzy: (body: unknown, query = "") => post<FuzzyBody>("/v1/search/fuzzy", body, query),
  };
}

describe("search context `vars`", () => {
  it("matches variable paths by prefix and by substring, in the namespace asked for or every one with *", async () => {
    const s = await startTestServer();
    running.push(s);
    expect((await s.call("/v1/namespace/prod", { method: "PUT", body: "{}" })).status).toBe(200);
    const v = variablesClient(s);
    for (const path of ["app/db", "app/cache", "other/db-backup"]) {
      expect((await v.set(path, { k: "secret-value" })).status).toBe(200);
    }
    const last = await v.set("app/db", { k: "v" }, "?namespace=prod");
    expect(last.status).toBe(200);
    const search = searcher(s);

    const found = await search.prefix({ Prefix: "app/", Context: "vars" });
    expect(found.status, found.text).toBe(200);
    expect(found.body.Matches).toEqual({ vars: ["app/cache", "app/db"] });
    expect(found.body.Truncations).toEqual({ vars: false });
    // The variables table's index, as Nomad answers a search of vars.
    expect(found.body.Index).toBe(indexOf(last));
    expect(
      (await search.prefix({ Prefix: "app/", Context: "vars" }, "?namespace=prod")).body.Matches,
    ).toEqual({
      vars: ["app/db"],
    });
    expect((await search.prefix({ Prefix: "app/", Context: "vars" }, "?namespace=*")).body.Matches).toEqual({
      vars: ["app/cache", "app/db", "app/db"],
    });
    expect((await search.prefix({ Prefix: "nope", Context: "vars" })).body.Matches).toEqual({ vars: null });
    // `all` includes them; values are never searched.
    expect((await search.prefix({ Prefix: "other/", Context: "all" })).body.Matches.vars).toEqual([
      "other/db-backup",
    ]);
    expect((await search.prefix({ Prefix: "secret", Context: "all" })).body.Matches.vars).toBeNull();

    const fuzzy = await search.fuzzy({ Text: "db", Context: "vars" });
    expect(fuzzy.status, fuzzy.text).toBe(200);
    // Earliest match first, then the shorter path.
    expect(fuzzy.body.Matches.vars).toEqual([
      { ID: "app/db", Scope: ["default", "app/db"] },
      { ID: "other/db-backup", Scope: ["default", "other/db-backup"] },
    ]);
    expect(fuzzy.body.Truncations).toEqual({ vars: false });
    expect(
      (await search.fuzzy({ Text: "db", Context: "vars" }, "?namespace=*")).body.Matches.vars,
    ).toContainEqual({ ID: "app/db", Scope: ["prod", "app/db"] });
    expect((await search.fuzzy({ Text: "secret", Context: "all" })).body.Matches.vars).toBeUndefined();
  });

  it("answers 20 paths and says more follow", async () => {
    const s = await startTestServer();
    running.push(s);
    const v = variablesClient(s);
    for (let i = 0; i < 22; i++) {
      expect((await v.set(`many/p${String(i).padStart(2, "0")}`, { k: "v" })).status).toBe(200);
    }
    const res = await searcher(s).prefix({ Prefix: "many/", Context: "vars" });
    expect(res.body.Matches.vars).toHaveLength(20);
    expect(res.body.Truncations.vars).toBe(true);
    // Nomad rounds an odd-length prefix down for every context but jobs, paths too: looked up as
    // "many/p", whose first 20 are p00..p19, so nothing matches "many/p2".
    expect((await searcher(s).prefix({ Prefix: "many/p2", Context: "vars" })).body).toMatchObject({
      Matches: { vars: null },
      Truncations: { vars: true },
    });
    expect((await searcher(s).prefix({ Prefix: "many/p21", Context: "vars" })).body).toMatchObject({
      Matches: { vars: ["many/p21"] },
      Truncations: { vars: false },
    });
  });

  it("names only the paths the caller may list, and refuses a caller with no variables rule", async () => {
    const acl = await startAclServer();
    running.push(acl.s);
    const root = variablesClient(acl.s, acl.root.SecretID);
    for (const path of ["app/a", "app/b", "private/app", "secret/x"]) {
      expect((await root.set(path, { k: "v" })).status).toBe(200);
    }
    await acl.policy(
      "app-lister",
      `namespace "default" {
  policy = "read"
  variables {
    path "app/*" { capabilities = ["list"] }
    path "private/*" { capabilities = ["write"] }
  }
}`,
    );
    await acl.policy("jobs-only", `namespace "default" { policy = "read" }`);
    const lister = searcher(acl.s, (await acl.token(["app-lister"])).SecretID);
    const jobsOnly = searcher(acl.s, (await acl.token(["jobs-only"])).SecretID);

    expect(
      (await searcher(acl.s, acl.root.SecretID).prefix({ Prefix: "", Context: "vars" })).body.Matches,
    ).toEqual({
      vars: ["app/a", "app/b", "private/app", "secret/x"],
    });
    expect((await lister.prefix({ Prefix: "", Context: "vars" })).body.Matches).toEqual({
      vars: ["app/a", "app/b"],
    });
    expect((await lister.prefix({ Prefix: "private/", Context: "vars" })).body.Matches).toEqual({
      vars: null,
    });
    expect(
      (await lister.fuzzy({ Text: "app", Context: "vars" })).body.Matches.vars?.map((m) => m.ID),
    ).toEqual(["app/a", "app/b"]);
    expect(
      (await lister.fuzzy({ Text: "app", Context: "vars" }, "?namespace=*")).body.Matches.vars,
    ).toHaveLength(2);

    // No variables rule in the namespace: the context is refused, and left out of `all`.
    expect((await jobsOnly.prefix({ Prefix: "app", Context: "vars" })).status).toBe(403);
    expect((await jobsOnly.fuzzy({ Text: "app", Context: "vars" })).status).toBe(403);
    const all = await jobsOnly.prefix({ Prefix: "app", Context: "all" });
    expect(all.status).toBe(200);
    expect(all.body.Matches).not.toHaveProperty("vars");
    expect((await searcher(acl.s).prefix({ Prefix: "app", Context: "vars" })).status).toBe(403);
  });
});
