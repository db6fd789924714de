import { describe, expect, it } from "vitest";
import { jwtOf } from "../../src/identity/jwt.ts";

describe("a JWT joined from its signing input and signature", () => {
  it("is the two parts with a dot between, however long, one after another", () => {
    const part = (n: number, c: string) => c.repeat(n);
    for (const n of [0, 1, 300, 1023, 1024, 5000, 20]) {
      const input = `${part(n, "a")}.${part(n >> 1, "B")}`;
      const signature = part(86, "-_".charAt(n & 1));
      expect(jwtOf(input, signature)).toBe(`${input}.${signature}`);
    }
  });
});
