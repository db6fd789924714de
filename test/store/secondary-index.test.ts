import { describe, expect, it } from "vitest";
import { SecondaryIndex } from "../../src/store/secondary-index.ts";

describe("SecondaryIndex", () => {
  it("files under the value last filed under until its set is dropped, then under a new set", () => {
    const idx = new SecondaryIndex();
    idx.file("ns", "a");
    idx.file("ns", "b");
    idx.file("other", "c");
    idx.file("ns", "d");
    expect([...idx.get("ns")!]).toEqual(["a", "b", "d"]);
    for (const k of ["a", "b", "d"]) idx.unfile("ns", k);
    expect(idx.get("ns")).toBeUndefined();
    // The value's set was dropped: the next key starts a set the index holds.
    idx.file("ns", "e");
    expect([...idx.get("ns")!]).toEqual(["e"]);
    idx.clear();
    expect(idx.get("ns")).toBeUndefined();
    idx.file("ns", "f");
    expect([...idx.get("ns")!]).toEqual(["f"]);
    expect(idx.get("other")).toBeUndefined();
  });
});
