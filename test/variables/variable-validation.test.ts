import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/api/api-error.ts";
import {
  itemsSize,
  MAX_VARIABLE_SIZE,
  parseCas,
  variableError,
} from "../../src/variables/variable-validation.ts";

describe("variableError (Nomad's VariableDecrypted.Validate)", () => {
  const v = (fields: Partial<Parameters<typeof variableError>[0]>) =>
    variableError({ Namespace: "default", Path: "app", Items: { k: "v" }, ...fields });

  it("checks the namespace, the items, their size, then the path, in Nomad's words", () => {
    expect(v({})).toBeUndefined();
    expect(v({ Namespace: "*" })).toBe('can not target wildcard ("*")namespace');
    expect(v({ Items: {} })).toBe("empty variables are invalid");
    expect(v({ Path: "nomad" })).toMatch(/reserved top-level/);
    expect(v({ Namespace: "*", Items: {} })).toMatch(/wildcard/);
  });

  it("counts the size as Go does, in UTF-8 bytes of keys and values, up to 64 KiB inclusive", () => {
    expect(itemsSize({ ab: "cde", é: "€" })).toBe(2 + 3 + 2 + 3);
    const at = { k: "x".repeat(MAX_VARIABLE_SIZE - 1) };
    expect(v({ Items: at })).toBeUndefined();
    expect(v({ Items: { k: "x".repeat(MAX_VARIABLE_SIZE) } })).toBe(
      "variables are limited to 64KiB in total size",
    );
    expect(v({ Items: { k: "é".repeat(MAX_VARIABLE_SIZE / 2) } })).toMatch(/64KiB/);
  });
});

describe("parseCas (Nomad's parseCAS)", () => {
  it("reads no cas as none, and a uint64 as the index expected", () => {
    expect(parseCas({})).toBeUndefined();
    expect(parseCas({ cas: "" })).toBeUndefined();
    expect(parseCas({ cas: "0" })).toBe(0);
    expect(parseCas({ cas: "42" })).toBe(42);
    expect(parseCas({ cas: ["7", "8"] })).toBe(7);
    // Past any index a JS number holds exactly: it can match nothing.
    expect(parseCas({ cas: "18446744073709551615" })).toBe(Number.POSITIVE_INFINITY);
  });

  it("refuses anything else with strconv.ParseUint's words", () => {
    const refused = (cas: string) => {
      try {
        parseCas({ cas });
      } catch (err) {
        expect(err).toBeInstanceOf(ApiError);
        expect((err as ApiError).status).toBe(400);
        return (err as ApiError).message;
      }
      throw new Error(`cas=${cas} accepted`);
    };
    expect(refused("x")).toBe('can not parse cas: strconv.ParseUint: parsing "x": invalid syntax');
    expect(refused("-1")).toBe('can not parse cas: strconv.ParseUint: parsing "-1": invalid syntax');
    expect(refused("1.5")).toMatch(/invalid syntax/);
    expect(refused("18446744073709551616")).toBe(
      'can not parse cas: strconv.ParseUint: parsing "18446744073709551616": value out of range',
    );
  });
});
