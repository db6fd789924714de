import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EvaluationSpec } from "../../../streams/evals.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { cyclingGroups, evaluation, upsertGroups } from "../eval-fixtures.ts";

interface Listed {
  readonly ID: string;
  readonly Namespace: string;
  readonly CreateIndex: number;
}

const TOTAL = 10_000;

/** Every page of a list, following X-Nomad-NextToken; the IDs in the order served. */
async function walk(s: TestServer, query: string): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let token = "";
  let pages = 0;
  do {
    const res = await s.call(
      `/v1/evaluations?${query}${token ? `&next_token=${encodeURIComponent(token)}` : ""}`,
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as Listed[];
    ids.push(...body.map((e) => e.ID));
    pages++;
    token = res.headers.get("x-nomad-nexttoken") ?? "";
  } while (token !== "");
  return { ids, pages };
}

describe("paging through 10,000 evaluations over HTTP", () => {
  let s: TestServer;
  let ordered: Listed[];

  beforeAll(async () => {
    s = await startTestServer();
    // Many evaluations per record and many records, so CreateIndex crosses
    // 9→10, 99→100 and 999→1000 with several evaluations at each index; one
    // in ten lives in a second namespace.
    const specs: EvaluationSpec[] = [];
    for (let i = 0; i < TOTAL; i++) specs.push(evaluation({ Namespace: i % 10 === 3 ? "batch" : "default" }));
    const groups = cyclingGroups(specs);
    const last = await upsertGroups(s.store, groups);
    expect(last).toBeGreaterThan(1000);
    ordered = [...s.store.table<Listed & { ModifyIndex: number }>("evals").list()];
    expect(ordered.length).toBe(TOTAL);
    for (const boundary of [9, 10, 99, 100, 999, 1000]) {
      expect(ordered.filter((e) => e.CreateIndex === boundary).length).toBeGreaterThan(0);
    }
  }, 60_000);

  afterAll(async () => {
    await s.stop();
  });

  for (const perPage of [1, 7, 100]) {
    for (const reverse of [false, true]) {
      it(`namespace=* per_page=${perPage}${reverse ? " reverse" : ""}: each exactly once, in order`, async () => {
        const { ids, pages } = await walk(s, `namespace=*&per_page=${perPage}&reverse=${reverse}`);
        const want = ordered.map((e) => e.ID);
        if (reverse) want.reverse();
        expect(ids.length).toBe(TOTAL);
        expect(new Set(ids).size).toBe(TOTAL);
        expect(ids).toEqual(want);
        expect(pages).toBe(Math.ceil(TOTAL / perPage));
      }, 120_000);
    }
  }

  for (const [namespace, perPage] of [
    ["batch", 7],
    ["default", 100],
  ] as const) {
    for (const reverse of [false, true]) {
      it(`namespace=${namespace} per_page=${perPage}${reverse ? " reverse" : ""}: only that namespace, each once`, async () => {
        const { ids } = await walk(s, `namespace=${namespace}&per_page=${perPage}&reverse=${reverse}`);
        const want = ordered.filter((e) => e.Namespace === namespace).map((e) => e.ID);
        if (reverse) want.reverse();
        expect(ids).toEqual(want);
      }, 60_000);
    }
  }

  it("pages a filtered list without skipping across digit-count boundaries", async () => {
    const { ids } = await walk(
      s,
      `namespace=*&per_page=7&filter=${encodeURIComponent('Namespace == "batch"')}`,
    );
    expect(ids).toEqual(ordered.filter((e) => e.Namespace === "batch").map((e) => e.ID));
  }, 60_000);

  it("pages by ID with a prefix, forward and reverse", async () => {
    const byId = ordered
      .filter((e) => e.ID.startsWith("a") && e.Namespace === "default")
      .map((e) => e.ID)
      .sort();
    const forward = await walk(s, "prefix=a&per_page=9");
    expect(forward.ids).toEqual(byId);
    const backward = await walk(s, "prefix=a&per_page=9&reverse=true");
    expect(backward.ids).toEqual([...byId].reverse());
  }, 60_000);
});
