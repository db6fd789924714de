import { describe, expect, it } from "vitest";
import { nextPeriodicLaunch } from "../../src/jobs/periodic-launch.ts";

const NOW = Date.UTC(2024, 0, 15, 10, 7, 30);
const ZERO = "0001-01-01T00:00:00Z";

describe("nextPeriodicLaunch (Nomad's PeriodicConfig.Next from now)", () => {
  it("answers the next cron launch in the job's zone, with its offset", () => {
    expect(nextPeriodicLaunch({ Enabled: true, SpecType: "cron", Spec: "*/15 * * * *" }, NOW)).toBe(
      "2024-01-15T10:15:00Z",
    );
    expect(
      nextPeriodicLaunch(
        { Enabled: true, SpecType: "cron", Spec: "0 9 * * *", TimeZone: "Asia/Kolkata" },
        NOW,
      ),
    ).toBe("2024-01-16T09:00:00+05:30");
    expect(nextPeriodicLaunch({ Enabled: true, Spec: "@hourly" }, NOW)).toBe("2024-01-15T11:00:00Z");
  });

  it("answers Go's zero time when there is nothing to launch", () => {
    expect(nextPeriodicLaunch(null, NOW)).toBe(ZERO);
    expect(nextPeriodicLaunch({ Enabled: false, SpecType: "cron", Spec: "* * * * *" }, NOW)).toBe(ZERO);
    expect(nextPeriodicLaunch({ Enabled: true, SpecType: "cron", Spec: "not cron" }, NOW)).toBe(ZERO);
    expect(nextPeriodicLaunch({ Enabled: true, Spec: "* * * * *", TimeZone: "Mars/Olympus" }, NOW)).toBe(
      ZERO,
    );
    expect(nextPeriodicLaunch({ Enabled: true, Spec: "0 0 1 1 * 2020" }, NOW)).toBe(ZERO);
  });

  it("reads Nomad's test spec type: Unix seconds, the first one after now", () => {
    const s = NOW / 1000;
    expect(
      nextPeriodicLaunch({ Enabled: true, SpecType: "test", Spec: `${s - 10},${s + 60},${s + 5}` }, NOW),
    ).toBe("2024-01-15T10:08:30Z");
    expect(nextPeriodicLaunch({ Enabled: true, SpecType: "test", Spec: `${s + 60},x` }, NOW)).toBe(ZERO);
  });
});
