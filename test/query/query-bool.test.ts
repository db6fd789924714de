import { describe, expect, it } from "vitest";
import { queryBool, staleParam } from "../../src/query/query-bool.ts";
import { QueryError } from "../../src/query/query-error.ts";

describe("queryBool", () => {
  it("reads Go's strconv.ParseBool spellings; absent or empty is unset", () => {
    for (const t of ["1", "t", "T", "TRUE", "true", "True"])
      expect(queryBool({ purge: t }, "purge")).toBe(true);
    for (const f of ["0", "f", "F", "FALSE", "false", "False"])
      expect(queryBool({ purge: f }, "purge")).toBe(false);
    expect(queryBool({}, "purge")).toBeUndefined();
    expect(queryBool({ purge: "" }, "purge")).toBeUndefined();
    expect(queryBool(undefined, "purge")).toBeUndefined();
    // The first of repeated values, as Go's url.Values.Get.
    expect(queryBool({ purge: ["True", "nope"] }, "purge")).toBe(true);
  });

  it("refuses anything else with a 400 naming the parameter, in Nomad's words", () => {
    for (const bad of ["yes", "tRUE", "2", " true"]) {
      let thrown: unknown;
      try {
        queryBool({ reverse: bad }, "reverse");
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(QueryError);
      expect((thrown as QueryError).status).toBe(400);
      expect((thrown as QueryError).message).toBe(
        `Failed to parse value of "reverse" (${bad}) as a bool: strconv.ParseBool: parsing ${JSON.stringify(bad)}: invalid syntax`,
      );
    }
  });
});

describe("queryBool on values a query string cannot hold", () => {
  it("refuses an object as not a boolean, even one whose toString throws", () => {
    expect(() => queryBool({ reverse: { toString: false } }, "reverse")).toThrow(QueryError);
    expect(() => queryBool({ reverse: [{}] }, "reverse")).toThrow(/\[object Object\]/);
    expect(queryBool({ reverse: true }, "reverse")).toBe(true);
  });
});

describe("staleParam", () => {
  it("is true when present without a value, and refuses a non-boolean as Nomad does", () => {
    expect(staleParam({})).toBe(false);
    expect(staleParam({ stale: "" })).toBe(true);
    expect(staleParam({ stale: "1" })).toBe(true);
    expect(staleParam({ stale: "False" })).toBe(false);
    expect(() => staleParam({ stale: "maybe" })).toThrow(
      "Expect `true` or `false` for `stale` query string parameter, got maybe",
    );
  });
});
