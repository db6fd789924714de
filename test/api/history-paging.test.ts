import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../projections/history.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { TestNode } from "./node-fixtures.ts";

/**
 * The history routes list as Nomad's lists do: per_page, next_token,
 * reverse and filter, with the same 400s, and ?at_index for the entries up
 * to an index. A node's history is the subject: its changes come only from
 * the test (virtual clock: no heartbeat ever expires).
 */
describe("history listing: paging, direction, filter, at_index", () => {
  let s: TestServer;
  let node: TestNode;
  /** The whole history, as GET answers it without parameters. */
  let all: HistoryEntry[];
  /** The index of the second eligibility change. */
  let secondToggle: number;

  const path = () => `/v1/node/${node.id}/history`;

  const get = async (query: string) => {
    const res = await s.call(`${path()}?${query}`);
    const text = await res.text();
    return {
      status: res.status,
      text,
      next: res.headers.get("x-nomad-nexttoken"),
      index: res.headers.get("x-nomad-index"),
      entries: res.status === 200 ? (JSON.parse(text) as HistoryEntry[]) : [],
    };
  };

  /** Every page of `query` in turn, with the tokens that led to them. */
  const allPages = async (query: string) => {
    const pages: HistoryEntry[][] = [];
    const tokens: string[] = [];
    let token = "";
    for (let guard = 0; guard < 100; guard++) {
      const page = await get(`${query}${token ? `&next_token=${encodeURIComponent(token)}` : ""}`);
      expect(page.status, page.text).toBe(200);
      pages.push(page.entries);
      if (!page.next) return { pages, tokens };
      tokens.push(page.next);
      token = page.next;
    }
    throw new Error("paging never ended");
  };

  const toggle = async (eligibility: "eligible" | "ineligible") => {
    const res = await s.call(`/v1/node/${node.id}/eligibility`, {
      method: "PUT",
      body: JSON.stringify({ Eligibility: eligibility }),
    });
    expect(res.status).toBe(200);
    return Number(res.headers.get("x-nomad-index"));
  };

  /** `<Index>.<n>` of the entry at `position` in `entries` (n counts earlier entries of its index). */
  const tokenOf = (entries: readonly HistoryEntry[], position: number) => {
    const e = entries[position]!;
    return `${e.Index}.${entries.slice(0, position).filter((x) => x.Index === e.Index).length}`;
  };

  beforeAll(async () => {
    s = await startTestServer({ deps: { clock: new VirtualClock() } });
    node = new TestNode(s);
    expect((await node.register()).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    await toggle("ineligible");
    secondToggle = await toggle("eligible");
    await toggle("ineligible");
    const res = await s.call(path());
    expect(res.status).toBe(200);
    all = (await res.json()) as HistoryEntry[];
  });
  afterAll(async () => s?.stop());

  it("has a history with several entries at one index (the fixture the paging tests need)", () => {
    expect(all.length).toBeGreaterThanOrEqual(6);
    const perIndex = new Map<number, number>();
    for (const e of all) perIndex.set(e.Index, (perIndex.get(e.Index) ?? 0) + 1);
    expect(Math.max(...perIndex.values())).toBeGreaterThan(1);
  });

  it("pages forward with <Index>.<n> tokens naming the first entry of the next page", async () => {
    for (const perPage of [1, 2, 3]) {
      const { pages, tokens } = await allPages(`per_page=${perPage}`);
      expect(pages.flat()).toEqual(all);
      expect(pages.every((p) => p.length <= perPage)).toBe(true);
      tokens.forEach((token, i) => {
        expect(token).toBe(tokenOf(all, (i + 1) * perPage));
      });
    }
    // The last page exactly full: no token, no empty page after it.
    const exact = await get(`per_page=${all.length}`);
    expect(exact.entries).toEqual(all);
    expect(exact.next).toBeNull();
  });

  it("pages newest first with reverse=true (and Go's other spellings of true)", async () => {
    const newestFirst = [...all].reverse();
    for (const reverse of ["true", "1", "T"]) {
      const { pages } = await allPages(`per_page=2&reverse=${reverse}`);
      expect(pages.flat()).toEqual(newestFirst);
    }
    expect((await get("reverse=false")).entries).toEqual(all);
  });

  it("starts at a bare index as at the first entry of that index", async () => {
    const fromSecond = await get(`next_token=${secondToggle}`);
    expect(fromSecond.entries).toEqual(all.filter((e) => e.Index >= secondToggle));
  });

  it("filters with bexpr over the entry's fields, Cause.* and Actor.* included, paging what passes", async () => {
    const eligibility = all.filter((e) => e.Field === "SchedulingEligibility");
    expect(eligibility.length).toBe(3);
    const { pages, tokens } = await allPages(
      `per_page=1&filter=${encodeURIComponent('Field == "SchedulingEligibility"')}`,
    );
    expect(pages.flat()).toEqual(eligibility);
    expect(tokens).toHaveLength(2);

    const byCause = await get(`filter=${encodeURIComponent('Cause.Event == "NodeEligibilityUpdated"')}`);
    expect(byCause.entries).toEqual(all.filter((e) => e.Cause.Event === "NodeEligibilityUpdated"));
    expect(byCause.entries.length).toBeGreaterThan(eligibility.length);

    const kind = all[0]!.Actor.kind;
    const byActor = await get(`filter=${encodeURIComponent(`Actor.kind == "${kind}"`)}`);
    expect(byActor.entries).toEqual(all.filter((e) => e.Actor.kind === kind));

    const to = await get(
      `filter=${encodeURIComponent('Field == "SchedulingEligibility" and To == "ineligible"')}&reverse=true`,
    );
    expect(to.entries.map((e) => e.Index)).toEqual(
      eligibility
        .filter((e) => e.To === "ineligible")
        .map((e) => e.Index)
        .reverse(),
    );
    // A key a cause does not have is a missing map key, not an error.
    const missing = await get(`filter=${encodeURIComponent('Cause.NoSuchField == "x"')}`);
    expect(missing.status).toBe(200);
    expect(missing.entries).toEqual([]);
    const byIndex = await get(`filter=${encodeURIComponent(`Index == ${secondToggle}`)}`);
    expect(byIndex.entries).toEqual(all.filter((e) => e.Index === secondToggle));
  });

  it("refuses a malformed filter, per_page, reverse or next_token with the other lists' texts", async () => {
    const listText = async (query: string) => {
      const res = await s.call(`/v1/evaluations?${query}`);
      expect(res.status).toBe(400);
      return res.text();
    };
    for (const query of [
      `filter=${encodeURIComponent("Field ==")}`,
      `filter=${encodeURIComponent("NoSuchField == 1")}`,
      "per_page=abc",
      "per_page=-1",
      "reverse=maybe",
    ]) {
      const page = await get(query);
      expect(page.status, query).toBe(400);
      // /v1/evaluations has rows to evaluate the filter on only if it has evaluations: the syntax is checked up front either way.
      if (!query.startsWith("filter=NoSuch")) expect(page.text, query).toBe(await listText(query));
    }
    expect((await get(`filter=${encodeURIComponent("NoSuchField == 1")}`)).text).toMatch(
      /^failed to read result page: /,
    );
    for (const token of ["abc", "12.x", "1.2.3", "-4"]) {
      const page = await get(`next_token=${encodeURIComponent(token)}`);
      expect(page.status, token).toBe(400);
      expect(page.text).toBe(
        `next_token must be <Index>.<n> as X-Nomad-NextToken gives it, or an index, got ${JSON.stringify(token)}`,
      );
    }
  });

  it("keeps the 404 for an object without history, whatever the parameters", async () => {
    const res = await s.call("/v1/node/no-such-node/history?per_page=1&filter=Field%20%3D%3D%20%22x%22");
    expect(res.status).toBe(404);
    expect(await res.text()).toBe("no history for node no-such-node");
    // A filter that lets nothing through is an empty page, not a 404.
    const none = await get(`filter=${encodeURIComponent('Field == "nothing"')}`);
    expect(none.status).toBe(200);
    expect(none.entries).toEqual([]);
  });

  it("answers ?at_index=N with the entries up to N, paged the same way", async () => {
    const upTo = all.filter((e) => e.Index <= secondToggle);
    expect(upTo.length).toBeLessThan(all.length);
    const past = await s.call(`${path()}?at_index=${secondToggle}`);
    expect(past.status).toBe(200);
    expect(past.headers.get("x-chronomad-at-index")).toBe(String(secondToggle));
    expect(past.headers.get("x-nomad-index")).toBe(String(secondToggle));
    expect(await past.json()).toEqual(upTo);
    const { pages } = await allPages(`at_index=${secondToggle}&per_page=2&reverse=true`);
    expect(pages.flat()).toEqual([...upTo].reverse());
    // Before the node existed it had no history.
    const before = await s.call(`${path()}?at_index=${all[0]!.Index - 1}`);
    expect(before.status).toBe(404);
  });

  it("still blocks on ?index= until the history changes, and pages the new answer", async () => {
    const current = await get("per_page=1&reverse=true");
    const index = Number(current.index);
    expect(index).toBe(all.at(-1)!.Index);
    const waiting = get(`index=${index}&wait=30s&per_page=1&reverse=true`);
    const changed = await toggle("eligible");
    const after = await waiting;
    expect(after.status).toBe(200);
    expect(Number(after.index)).toBe(changed);
    expect(after.entries).toHaveLength(1);
    expect(after.entries[0]!.Index).toBe(changed);
    expect(after.next).toMatch(/^[0-9]+\.[0-9]+$/);
  });
});
