import { afterEach, describe, expect, it } from "vitest";
import { jsonArrayInSlices } from "../../src/query/sliced-walk.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { evaluation, upsertGroups } from "./eval-fixtures.ts";

async function text(chunks: AsyncIterable<string>): Promise<string> {
  let all = "";
  for await (const c of chunks) all += c;
  return all;
}

describe("jsonArrayInSlices", () => {
  it("gives exactly what JSON.stringify gives", async () => {
    for (const rows of [
      [],
      [1],
      [{ a: "x" }, null, "s", [1, 2]],
      Array.from({ length: 1000 }, (_, i) => ({ i })),
    ]) {
      expect(await text(jsonArrayInSlices(rows))).toBe(JSON.stringify(rows));
    }
  });
});

describe("long lists over HTTP", () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it("are answered whole, as JSON, without per_page", async () => {
    server = await startTestServer();
    const evals = Array.from({ length: 5_000 }, () => evaluation());
    await upsertGroups(server.store, [evals.slice(0, 2_500), evals.slice(2_500)]);
    const res = await server.call("/v1/evaluations?namespace=*");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("x-nomad-index")).not.toBeNull();
    const body = (await res.json()) as { ID: string }[];
    expect(new Set(body.map((e) => e.ID))).toEqual(new Set(evals.map((e) => e.ID)));
  });
});
