import { describe, expect, it } from "vitest";
import {
  ANY,
  BOOL,
  flatten,
  goDuration,
  goFloat,
  INT,
  map,
  ptr,
  STRING,
  slice,
  struct,
  toGo,
} from "../../src/jobs/go-values.ts";

const PAIR = struct({ A: STRING, B: INT });
const OUTER = struct({
  Name: STRING,
  Count: INT,
  On: BOOL,
  Meta: map(STRING),
  Inner: ptr(PAIR),
  Value: PAIR,
  Tags: slice(STRING),
  Delay: ptr(INT),
  Config: map(ANY),
});

describe("toGo", () => {
  it("fills every struct field with Go's zero value and drops unknown ones", () => {
    expect(toGo({ Name: "x", Extra: 1 }, OUTER)).toEqual({
      Name: "x",
      Count: 0,
      On: false,
      Meta: null,
      Inner: null,
      Value: { A: "", B: 0 },
      Tags: null,
      Delay: null,
      Config: null,
    });
  });

  it("makes empty slices and maps nil, as Nomad's api-to-structs conversion does", () => {
    const v = toGo({ Tags: [], Meta: {}, Config: {} }, OUTER);
    expect(v).toMatchObject({ Tags: null, Meta: null, Config: null });
  });
});

describe("flatten (Nomad's flatmap.Flatten)", () => {
  const value = toGo(
    {
      Name: "web",
      Count: 3,
      Meta: { owner: "ops" },
      Inner: { A: "a", B: 1 },
      Tags: ["x"],
      Delay: 5,
      Config: { image: "nginx", ports: [80, 443], nested: { n: 1e6 }, none: null },
    },
    OUTER,
  );

  it("keeps the primitive fields and map entries, skipping pointers, structs and slices", () => {
    expect({ ...flatten(value, OUTER, null, true) }).toEqual({
      Name: "web",
      Count: "3",
      On: "false",
      "Meta[owner]": "ops",
    });
  });

  it("walks everything when not primitive-only: nested structs, slices, nil values, float64 config", () => {
    expect({ ...flatten(value, OUTER, ["Name"], false) }).toEqual({
      Count: "3",
      On: "false",
      "Meta[owner]": "ops",
      "Inner.A": "a",
      "Inner.B": "1",
      "Value.A": "",
      "Value.B": "0",
      "Tags[0]": "x",
      Delay: "5",
      "Config[image]": "nginx",
      "Config[ports][0]": "80",
      "Config[ports][1]": "443",
      "Config[nested][n]": "1e+06",
      "Config[none]": "nil",
    });
  });

  it("answers nil for Go's untyped nil, and a nil pointer prints as nil", () => {
    expect(flatten(undefined, OUTER, null, true)).toBeNull();
    expect({ ...flatten(null, ptr(PAIR), null, true) }).toEqual({ "": "nil" });
  });

  it("treats map keys such as __proto__ as plain keys", () => {
    const v = toGo(JSON.parse('{"__proto__": "x", "constructor": "y"}'), map(STRING));
    expect({ ...flatten(v, map(STRING), null, false) }).toEqual(
      JSON.parse('{"__proto__": "x", "constructor": "y"}'),
    );
  });
});

describe("Go's number and duration printing", () => {
  it("prints float64 as %v does: exponent form from 1e6 and below 1e-4", () => {
    expect(goFloat(8080)).toBe("8080");
    expect(goFloat(123456)).toBe("123456");
    expect(goFloat(1e6)).toBe("1e+06");
    expect(goFloat(1234567)).toBe("1.234567e+06");
    expect(goFloat(0.5)).toBe("0.5");
    expect(goFloat(0.0001)).toBe("0.0001");
    expect(goFloat(0.00001)).toBe("1e-05");
    expect(goFloat(-2.5e-10)).toBe("-2.5e-10");
    expect(goFloat(1e21)).toBe("1e+21");
    expect(goFloat(1e100)).toBe("1e+100");
    expect(goFloat(0)).toBe("0");
  });

  it("prints durations as time.Duration.String does", () => {
    expect(goDuration(0)).toBe("0s");
    expect(goDuration(1)).toBe("1ns");
    expect(goDuration(1500)).toBe("1.5µs");
    expect(goDuration(2_000_000)).toBe("2ms");
    expect(goDuration(1e9)).toBe("1s");
    expect(goDuration(1.5e9)).toBe("1.5s");
    expect(goDuration(90e9)).toBe("1m30s");
    expect(goDuration(3600e9)).toBe("1h0m0s");
    expect(goDuration(3723.5e9)).toBe("1h2m3.5s");
    expect(goDuration(-5e9)).toBe("-5s");
  });
});
