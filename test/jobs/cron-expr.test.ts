import { describe, expect, it } from "vitest";
import { CronSyntaxError, nextCron, parseCron } from "../../src/jobs/cron-expr.ts";
import { formatRFC3339, goDate, offsetAt } from "../../src/jobs/go-time-zone.ts";

/** The next `n` launches after `from`, printed as Go's JSON prints a time in that zone. */
function launches(spec: string, zone: string, from: number, n = 4): string[] {
  const expr = parseCron(spec);
  const out: string[] = [];
  let t: number | null = from;
  for (let i = 0; i < n; i++) {
    t = nextCron(expr, t, zone);
    if (t === null) {
      out.push("zero");
      break;
    }
    out.push(formatRFC3339(t, zone));
  }
  return out;
}

// Expected values are what github.com/hashicorp/cronexpr v1.1.2 answers (Nomad v1.6.1's).
describe("nextCron (hashicorp/cronexpr's Next)", () => {
  it("steps through plain fields, seconds and years", () => {
    expect(launches("*/15 * * * *", "UTC", 1700000000000)).toEqual([
      "2023-11-14T22:15:00Z",
      "2023-11-14T22:30:00Z",
      "2023-11-14T22:45:00Z",
      "2023-11-14T23:00:00Z",
    ]);
    expect(launches("*/30 * * * * * *", "UTC", 1700000000500)).toEqual([
      "2023-11-14T22:13:30Z",
      "2023-11-14T22:14:00Z",
      "2023-11-14T22:14:30Z",
      "2023-11-14T22:15:00Z",
    ]);
    expect(launches("0 0 29 2 *", "UTC", 1700000000000)).toEqual([
      "2024-02-29T00:00:00Z",
      "2028-02-29T00:00:00Z",
      "2032-02-29T00:00:00Z",
      "2036-02-29T00:00:00Z",
    ]);
    expect(launches("59 23 31 12 * 2030", "UTC", 1700000000000)).toEqual(["2030-12-31T23:59:00Z", "zero"]);
    expect(launches("* * * * * 1999", "UTC", 1700000000000)).toEqual(["zero"]);
  });

  it("knows last days, nearest weekdays, last and nth weekdays of the month", () => {
    expect(launches("0 0 L * *", "UTC", 1706745600000)).toEqual([
      "2024-02-29T00:00:00Z",
      "2024-03-31T00:00:00Z",
      "2024-04-30T00:00:00Z",
      "2024-05-31T00:00:00Z",
    ]);
    expect(launches("0 0 LW * *", "UTC", 1711929600000)).toEqual([
      "2024-04-30T00:00:00Z",
      "2024-05-31T00:00:00Z",
      "2024-06-28T00:00:00Z",
      "2024-07-31T00:00:00Z",
    ]);
    expect(launches("0 0 15W * *", "UTC", 1717200000000)).toEqual([
      "2024-06-14T00:00:00Z",
      "2024-07-15T00:00:00Z",
      "2024-08-15T00:00:00Z",
      "2024-09-16T00:00:00Z",
    ]);
    expect(launches("0 9 * * 5L", "UTC", 1700000000000)).toEqual([
      "2023-11-24T09:00:00Z",
      "2023-12-29T09:00:00Z",
      "2024-01-26T09:00:00Z",
      "2024-02-23T09:00:00Z",
    ]);
    expect(launches("0 9 * * 1#2", "UTC", 1700000000000)).toEqual([
      "2023-12-11T09:00:00Z",
      "2024-01-08T09:00:00Z",
      "2024-02-12T09:00:00Z",
      "2024-03-11T09:00:00Z",
    ]);
    // cronexpr reads a day of week "01" as no token, so Sunday.
    expect(launches("0 0 * * 01", "UTC", 1700000000000, 1)).toEqual(["2023-11-19T00:00:00Z"]);
  });

  it("follows the wall clock of the job's zone across DST changes, as Go does", () => {
    // 02:30 does not exist on 2024-03-10 in New York: that day is skipped.
    expect(launches("30 2 * * *", "America/New_York", 1710000000000, 2)).toEqual([
      "2024-03-11T02:30:00-04:00",
      "2024-03-12T02:30:00-04:00",
    ]);
    // 01:30 happens twice on 2024-11-03: both are launches.
    expect(launches("30 1 * * *", "America/New_York", 1730600000000, 3)).toEqual([
      "2024-11-03T01:30:00-04:00",
      "2024-11-03T01:30:00-05:00",
      "2024-11-04T01:30:00-05:00",
    ]);
    // Lord Howe moves its clocks by half an hour.
    expect(launches("0 3 * * *", "Australia/Lord_Howe", 1696000000000, 2)).toEqual([
      "2023-09-30T03:00:00+10:30",
      "2023-10-01T03:00:00+11:00",
    ]);
    expect(launches("@weekly", "Europe/Berlin", 1711800000000, 2)).toEqual([
      "2024-03-31T00:00:00+01:00",
      "2024-04-07T00:00:00+02:00",
    ]);
  });

  it("refuses bad expressions with cronexpr's messages", () => {
    const error = (spec: string) => {
      try {
        parseCron(spec);
        return "";
      } catch (err) {
        expect(err).toBeInstanceOf(CronSyntaxError);
        return (err as Error).message;
      }
    };
    expect(error("61 * * * *")).toBe("syntax error in minute field: '61'");
    expect(error("*/0 * * * *")).toBe("invalid interval */0");
    expect(error("0 0 * * 1#6")).toBe("syntax error in day-of-week field: '1#6'");
    expect(error("* * * *")).toBe("missing field(s)");
  });
});

describe("goDate (Go's time.Date in a zone)", () => {
  it("carries out-of-range fields over and picks Go's offset in gaps", () => {
    expect(goDate(2024, 13, 1, 0, 0, 0, "UTC")).toBe(Date.UTC(2025, 0, 1));
    expect(goDate(2024, 2, 30, 25, 0, 0, "UTC")).toBe(Date.UTC(2024, 2, 2, 1));
    // 02:30 on 2024-03-10 does not exist in New York: Go gives 06:30Z (01:30 EST).
    expect(new Date(goDate(2024, 3, 10, 2, 30, 0, "America/New_York")).toISOString()).toBe(
      "2024-03-10T06:30:00.000Z",
    );
    // 01:30 on 2024-11-03 happens twice: Go gives the first (EDT).
    expect(new Date(goDate(2024, 11, 3, 1, 30, 0, "America/New_York")).toISOString()).toBe(
      "2024-11-03T05:30:00.000Z",
    );
    expect(offsetAt(Date.UTC(2024, 6, 1), "Europe/Berlin")).toBe(7200);
  });
});
