import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  closestMatch,
  compareBytes,
  compileGlob,
  type GlobMatch,
  globDifference,
  globMatch,
  goStableSort,
  matchingGlobs,
} from "../../../src/acl/policy/glob.ts";

describe("globMatch (ryanuber/go-glob's tests)", () => {
  it("an empty pattern matches only the empty subject", () => {
    expect(globMatch("", "")).toBe(true);
    expect(globMatch("", "test")).toBe(false);
  });

  it("the empty subject", () => {
    for (const p of ["", "*", "**", "***", "*".repeat(10_000)]) expect(globMatch(p, ""), p).toBe(true);
    for (const p of [
      "test",
      "*test*",
      "*x",
      "*****x",
      `${"*".repeat(10_000)}x`,
      "x*",
      "x*****",
      "x*x",
      "x****x",
    ]) {
      expect(globMatch(p, ""), p).toBe(false);
    }
  });

  it("patterns without globs match only themselves", () => {
    expect(globMatch("test", "test")).toBe(true);
    expect(globMatch("test", "tes")).toBe(false);
  });

  it("matches", () => {
    for (const p of [
      "*test",
      "this*",
      "this*test",
      "*is *",
      "*is*a*",
      "**test**",
      "**is**a***test*",
      "* *",
      "*",
      "**********",
      "*Ѿ*",
      "*is a ϗѾ *",
    ]) {
      expect(globMatch(p, "this is a ϗѾ test"), p).toBe(true);
    }
  });

  it("non-matches", () => {
    for (const p of ["test*", "*is", "*no*", " ", "* ", " *", "*ʤ*", "this*this is a test"]) {
      expect(globMatch(p, "this is a test"), p).toBe(false);
    }
  });

  it("parts must not overlap: the last part is looked for after the others", () => {
    expect(globMatch("ab*ba", "aba")).toBe(false);
    expect(globMatch("a*a", "a")).toBe(false);
    expect(globMatch("a*a", "aa")).toBe(true);
    expect(globMatch("a*bc*c", "abc")).toBe(false);
  });

  it("agrees with a regular expression for star-only patterns", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[ab*]{0,6}$/), fc.stringMatching(/^[ab]{0,8}$/), (pattern, subject) => {
        const re = new RegExp(`^${pattern.replaceAll("*", ".*")}$`);
        expect(globMatch(pattern, subject)).toBe(re.test(subject));
      }),
    );
  });
});

describe("differences (TestACL_matchingCapabilitySet_difference)", () => {
  const cases: [string, string, number][] = [
    ["production-*", "production-api", 3],
    ["production-*", "production-admin-api", 9],
    ["production-**", "production-admin-api", 9],
    ["*", "production-admin-api", 20],
    ["*admin*", "production-admin-api", 15],
  ];
  for (const [pattern, name, difference] of cases) {
    it(`${pattern} vs ${name}`, () => {
      expect(globDifference(pattern, name)).toBe(difference);
      expect(matchingGlobs([compileGlob(pattern, 0)], name)[0]?.difference).toBe(difference);
    });
  }

  it("counts bytes, as Go's len does", () => {
    // 4 bytes - 3 bytes + 1 star; counting characters would give 1.
    expect(globDifference("é*", "éé")).toBe(2);
  });
});

describe("matchingGlobs (TestACL_matchingCapabilitySet_returnsAllMatches)", () => {
  const globs = (...patterns: string[]) => [...patterns].sort(compareBytes).map((p) => compileGlob(p, p));
  it("returns every match, in walk order", () => {
    expect(matchingGlobs(globs("production-*"), "production-api").map((m) => m.pattern)).toEqual([
      "production-*",
    ]);
    expect(matchingGlobs(globs("prod-*"), "production-api")).toEqual([]);
    expect(
      matchingGlobs(globs("production-*-api", "production-*"), "production-admin-api").map((m) => m.pattern),
    ).toEqual(["production-*", "production-*-api"]);
  });

  it("walks in byte order, not UTF-16 order", () => {
    expect(["\u{1F600}*", "\uFF61*"].sort(compareBytes)).toEqual(["\uFF61*", "\u{1F600}*"]);
  });
});

/**
 * Go's sort.SliceStable(matches, func(i, j) bool { return d[i] <= d[j] })
 * on these difference lists (one digit each), as recorded from Go; every
 * list is longer than 20, so the merge passes run.
 */
const GO_SORTS: readonly { readonly d: string; readonly go: readonly number[] }[] = [
  {
    d: "10001000011000100001000011001000100001111",
    go: [
      36, 35, 34, 33, 31, 30, 29, 27, 26, 23, 22, 21, 20, 18, 17, 16, 15, 13, 12, 11, 8, 7, 6, 5, 3, 2, 1, 40,
      39, 38, 37, 32, 28, 25, 24, 19, 14, 10, 9, 4, 0,
    ],
  },
  {
    d: "2211102323200312133002223300230023232032103012113330133213",
    go: [
      51, 43, 41, 37, 31, 30, 27, 26, 20, 19, 12, 11, 5, 56, 52, 47, 46, 44, 40, 16, 14, 4, 3, 2, 55, 45, 39,
      36, 34, 32, 28, 23, 22, 21, 15, 10, 8, 6, 1, 0, 57, 54, 53, 50, 49, 48, 42, 38, 35, 33, 29, 25, 24, 18,
      17, 13, 9, 7,
    ],
  },
  {
    d: "21121000000200120110012122102222220122111101210000100120",
    go: [
      55, 52, 51, 49, 48, 47, 46, 42, 34, 27, 20, 19, 16, 13, 12, 10, 9, 8, 7, 6, 5, 53, 50, 45, 43, 41, 40,
      39, 38, 35, 26, 23, 21, 18, 17, 14, 4, 2, 1, 54, 44, 37, 36, 33, 32, 31, 30, 29, 28, 25, 24, 22, 15, 11,
      3, 0,
    ],
  },
  {
    d: "000000000000000000000000000",
    go: [26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
  },
  {
    d: "2140420242121444214113114320023214",
    go: [
      28, 27, 6, 3, 32, 23, 22, 20, 19, 17, 12, 10, 1, 31, 29, 26, 16, 11, 9, 7, 5, 0, 30, 25, 21, 33, 24, 18,
      15, 14, 13, 8, 4, 2,
    ],
  },
  {
    d: "2201013121303200313132033301110131321100013",
    go: [
      40, 39, 38, 30, 26, 22, 15, 14, 11, 4, 2, 41, 37, 36, 33, 31, 29, 28, 27, 19, 17, 9, 7, 5, 3, 35, 21,
      13, 8, 1, 0, 42, 34, 32, 25, 24, 23, 20, 18, 16, 12, 10, 6,
    ],
  },
  {
    d: "010101110011100010000010011000010",
    go: [
      32, 30, 29, 28, 27, 24, 23, 21, 20, 19, 18, 17, 15, 14, 13, 9, 8, 4, 2, 0, 31, 26, 25, 22, 16, 12, 11,
      10, 7, 6, 5, 3, 1,
    ],
  },
  {
    d: "0000000000000000000000000000000000000000000000000000000000000000000000",
    go: [
      69, 68, 67, 66, 65, 64, 63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44,
      43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18,
      17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
    ],
  },
  {
    d: "443202013020020410203024324104",
    go: [
      28, 21, 19, 17, 14, 12, 11, 9, 6, 4, 27, 16, 7, 25, 22, 18, 13, 10, 5, 3, 24, 20, 8, 2, 29, 26, 23, 15,
      1, 0,
    ],
  },
  {
    d: "001000110110110100001010111100100110000110001101010011011110010100",
    go: [
      65, 64, 62, 60, 59, 54, 51, 50, 48, 46, 43, 42, 41, 38, 37, 36, 35, 32, 31, 29, 28, 23, 21, 19, 18, 17,
      16, 14, 11, 8, 5, 4, 3, 1, 0, 63, 61, 58, 57, 56, 55, 53, 52, 49, 47, 45, 44, 40, 39, 34, 33, 30, 27,
      26, 25, 24, 22, 20, 15, 13, 12, 10, 9, 7, 6, 2,
    ],
  },
  {
    d: "032110020130302210132312103101000120330013",
    go: [
      39, 38, 35, 32, 31, 30, 28, 25, 17, 13, 11, 8, 6, 5, 0, 40, 33, 29, 27, 24, 22, 18, 16, 9, 4, 3, 34, 23,
      20, 15, 14, 7, 2, 41, 37, 36, 26, 21, 19, 12, 10, 1,
    ],
  },
  {
    d: "0000000000000000000000000000000000000",
    go: [
      36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11,
      10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
    ],
  },
  {
    d: "00000000000000000000000000000000000000000000000000",
    go: [
      49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24,
      23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
    ],
  },
  {
    d: "3023202002112321230310033",
    go: [22, 21, 18, 8, 7, 5, 1, 20, 15, 11, 10, 16, 14, 12, 9, 6, 4, 2, 24, 23, 19, 17, 13, 3, 0],
  },
  {
    d: "110001111111101110000010111100000101011001110111011100010111",
    go: [
      56, 54, 53, 52, 48, 44, 40, 39, 36, 34, 32, 31, 30, 29, 28, 23, 21, 20, 19, 18, 17, 13, 4, 3, 2, 59, 58,
      57, 55, 51, 50, 49, 47, 46, 45, 43, 42, 41, 38, 37, 35, 33, 27, 26, 25, 24, 22, 16, 15, 14, 12, 11, 10,
      9, 8, 7, 6, 5, 1, 0,
    ],
  },
  {
    d: "000121210012110000022022210200002022102122120001",
    go: [
      46, 45, 44, 37, 33, 31, 30, 29, 28, 26, 21, 18, 17, 16, 15, 14, 9, 8, 2, 1, 0, 47, 42, 39, 36, 25, 13,
      12, 10, 7, 5, 3, 43, 41, 40, 38, 35, 34, 32, 27, 24, 23, 22, 20, 19, 11, 6, 4,
    ],
  },
  {
    d: "132140042322134141032001330213213023231024013121131220",
    go: [
      53, 42, 39, 33, 26, 22, 21, 18, 6, 5, 50, 48, 47, 45, 43, 38, 31, 28, 23, 17, 15, 12, 3, 0, 52, 51, 46,
      40, 36, 34, 30, 27, 20, 11, 10, 8, 2, 49, 44, 37, 35, 32, 29, 25, 24, 19, 13, 9, 1, 41, 16, 14, 7, 4,
    ],
  },
  {
    d: "113301301013001332001211302322310002023013223003123122303130",
    go: [
      59, 55, 46, 45, 39, 36, 34, 33, 32, 25, 19, 18, 13, 12, 9, 7, 4, 57, 51, 48, 40, 31, 23, 22, 20, 14, 10,
      8, 5, 1, 0, 53, 52, 49, 43, 42, 37, 35, 29, 28, 26, 21, 17, 58, 56, 54, 50, 47, 44, 41, 38, 30, 27, 24,
      16, 15, 11, 6, 3, 2,
    ],
  },
  {
    d: "000000000000000000000000000000000000000000000",
    go: [
      44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19,
      18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
    ],
  },
  {
    d: "421300240103331113341402224222213111112412032144103",
    go: [
      49, 42, 22, 10, 8, 5, 4, 48, 45, 40, 37, 36, 35, 34, 33, 31, 20, 16, 15, 14, 9, 2, 44, 41, 38, 30, 29,
      28, 27, 25, 24, 23, 6, 1, 50, 43, 32, 18, 17, 13, 12, 11, 3, 47, 46, 39, 26, 21, 19, 7, 0,
    ],
  },
  {
    d: "00000000000000000000000",
    go: [22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
  },
  {
    d: "001000111010001101010001111110111101011001",
    go: [
      40, 39, 36, 34, 29, 22, 21, 20, 18, 16, 13, 12, 11, 9, 5, 4, 3, 1, 0, 41, 38, 37, 35, 33, 32, 31, 30,
      28, 27, 26, 25, 24, 23, 19, 17, 15, 14, 10, 8, 7, 6, 2,
    ],
  },
  {
    d: "0032311001302112211003312103203",
    go: [
      29, 26, 20, 19, 11, 8, 7, 1, 0, 25, 23, 18, 17, 14, 13, 9, 6, 5, 28, 24, 16, 15, 12, 3, 30, 27, 22, 21,
      10, 4, 2,
    ],
  },
  {
    d: "11434131410341320111040203",
    go: [24, 22, 20, 16, 10, 19, 18, 17, 13, 9, 7, 5, 1, 0, 23, 15, 25, 14, 11, 6, 3, 21, 12, 8, 4, 2],
  },
];

describe("Go's stable sort with Nomad's non-strict comparator", () => {
  it("orders as Go does", () => {
    for (const { d, go } of GO_SORTS) {
      const diffs = [...d].map(Number);
      const order = diffs.map((_, i) => i);
      goStableSort(order, (i, j) => diffs[order[i]!]! <= diffs[order[j]!]!);
      expect(order, d).toEqual(go);
    }
  });

  it("orders as Go does for a strict comparator too (a plain stable sort)", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(5), { maxLength: 120 }), (xs) => {
        const order = xs.map((_, i) => i);
        goStableSort(order, (i, j) => xs[order[i]!]! < xs[order[j]!]!);
        const want = xs.map((_, i) => i).sort((a, b) => xs[a]! - xs[b]! || a - b);
        expect(order).toEqual(want);
      }),
    );
  });

  it("closestMatch picks what Go's sort puts first: the last of the smallest difference", () => {
    const match = (difference: number, i: number): GlobMatch<number> => ({
      pattern: String(i),
      difference,
      value: i,
    });
    for (const { d, go } of GO_SORTS) {
      expect(closestMatch([...d].map((x, i) => match(Number(x), i)))?.value, d).toBe(go[0]);
    }
    fc.assert(
      fc.property(fc.array(fc.nat(4), { minLength: 1, maxLength: 150 }), (xs) => {
        let last = 0;
        xs.forEach((x, i) => {
          if (x <= xs[last]!) last = i;
        });
        expect(closestMatch(xs.map(match))?.value).toBe(last);
      }),
    );
    expect(closestMatch([])).toBeUndefined();
  });
});
