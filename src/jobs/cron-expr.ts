import { goDate, offsetAt, UTC, wallClock } from "./go-time-zone.ts";

/**
 * Cron expressions as Nomad reads a periodic job's spec: a port of
 * github.com/hashicorp/cronexpr v1.1.2 (Nomad v1.6.1's, from gorhill's
 * cronexpr; Apache 2.0). Five fields are minute to day of week; six add a
 * year; seven put seconds first. Also `@hourly` and the like, `?`, `L`,
 * `W`, `LW`, `5L` and `5#3`, month and day names, and cronexpr's quirks
 * (day of week "01" reads as Sunday, steps are read from a table of
 * 0-59 and 1970-2099).
 */

export class CronSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CronSyntaxError";
  }
}

export interface CronExpression {
  readonly seconds: readonly number[];
  readonly minutes: readonly number[];
  readonly hours: readonly number[];
  readonly daysOfMonth: ReadonlySet<number>;
  readonly workdaysOfMonth: ReadonlySet<number>;
  readonly lastDayOfMonth: boolean;
  readonly lastWorkdayOfMonth: boolean;
  readonly daysOfMonthRestricted: boolean;
  readonly months: readonly number[];
  readonly daysOfWeek: ReadonlySet<number>;
  readonly specificWeekDaysOfWeek: ReadonlySet<number>;
  readonly lastWeekDaysOfWeek: ReadonlySet<number>;
  readonly daysOfWeekRestricted: boolean;
  readonly years: readonly number[];
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** cronexpr's numberTokens: 0-9, 00-09, 10-59 and 1970-2099; anything else reads as 0. */
function atoi(s: string): number {
  if (/^(?:[0-9]|0[0-9]|[1-5][0-9]|19[7-9][0-9]|20[0-9][0-9])$/.test(s)) return Number(s);
  return 0;
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const MONTH_NAMES = [
  "january",
  "february",
  "march",
  "april",
  "may",
  "june",
  "july",
  "august",
  "september",
  "october",
  "november",
  "december",
];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const DAY_NAMES = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];

function monthAtoi(s: string): number {
  if (/^(?:[1-9]|0[1-9]|1[0-2])$/.test(s)) return Number(s);
  const i = MONTHS.indexOf(s);
  return i >= 0 ? i + 1 : MONTH_NAMES.indexOf(s) + 1;
}

/** cronexpr's dowTokens: 0-7 (7 is Sunday) and names; "01" and the like are not tokens, so 0. */
function dowAtoi(s: string): number {
  if (/^[0-7]$/.test(s)) return Number(s) % 7;
  const i = DAYS.indexOf(s);
  return i >= 0 ? i : Math.max(0, DAY_NAMES.indexOf(s));
}

interface Field {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly value: string;
  readonly atoi: (s: string) => number;
}

const SECOND: Field = { name: "second", min: 0, max: 59, value: "0?[0-9]|[1-5][0-9]", atoi };
const MINUTE: Field = { ...SECOND, name: "minute" };
const HOUR: Field = { name: "hour", min: 0, max: 23, value: "0?[0-9]|1[0-9]|2[0-3]", atoi };
const DOM: Field = { name: "day-of-month", min: 1, max: 31, value: "0?[1-9]|[12][0-9]|3[01]", atoi };
const MONTH: Field = {
  name: "month",
  min: 1,
  max: 12,
  value: `0?[1-9]|1[012]|${MONTHS.join("|")}|${MONTH_NAMES.join("|")}`,
  atoi: monthAtoi,
};
const DOW: Field = {
  name: "day-of-week",
  min: 0,
  max: 6,
  value: `0?[0-7]|${DAYS.join("|")}|${DAY_NAMES.join("|")}`,
  atoi: dowAtoi,
};
const YEAR: Field = { name: "year", min: 1970, max: 2099, value: "19[789][0-9]|20[0-9]{2}", atoi };

type Directive =
  | { readonly kind: "none"; readonly text: string }
  | { readonly kind: "one"; readonly first: number }
  | { readonly kind: "span"; readonly first: number; last: number; readonly step: number }
  | { readonly kind: "all"; readonly first: number; readonly last: number };

const layouts = new Map<string, RegExp>();
function layout(pattern: string, value: string): RegExp {
  const source = pattern.replaceAll("%value%", value);
  let re = layouts.get(source);
  if (!re) {
    re = new RegExp(source);
    layouts.set(source, re);
  }
  return re;
}

function parseField(s: string, f: Field): Directive[] {
  const entries = s.match(/[^,]+/g);
  if (!entries) throw new CronSyntaxError(`${f.name} field: missing directive`);
  return entries.map((entry): Directive => {
    const e = entry.toLowerCase();
    if (/^\*$|^\?$/.test(e)) return { kind: "all", first: f.min, last: f.max };
    if (layout("^(%value%)$", f.value).test(e)) return { kind: "one", first: f.atoi(e) };
    let m = layout("^(%value%)-(%value%)$", f.value).exec(e);
    if (m) return { kind: "span", first: f.atoi(m[1]!), last: f.atoi(m[2]!), step: 1 };
    const interval = (step: number) => {
      if (step < 1 || step > f.max) throw new CronSyntaxError(`invalid interval ${e}`);
      return step;
    };
    m = /^\*\/(\d+)$/.exec(e);
    if (m) return { kind: "span", first: f.min, last: f.max, step: interval(atoi(m[1]!)) };
    m = layout("^(%value%)/(\\d+)$", f.value).exec(e);
    if (m) return { kind: "span", first: f.atoi(m[1]!), last: f.max, step: interval(atoi(m[2]!)) };
    m = layout("^(%value%)-(%value%)/(\\d+)$", f.value).exec(e);
    if (m) return { kind: "span", first: f.atoi(m[1]!), last: f.atoi(m[2]!), step: interval(atoi(m[3]!)) };
    return { kind: "none", text: entry };
  });
}

function populate(values: Set<number>, first: number, last: number, step: number): void {
  for (let i = first; i <= last; i += step) values.add(i);
}

const sorted = (values: Iterable<number>) => [...new Set(values)].sort((a, b) => a - b);

function genericField(s: string, f: Field): number[] {
  const values = new Set<number>();
  for (const d of parseField(s, f)) {
    switch (d.kind) {
      case "none":
        throw new CronSyntaxError(`syntax error in ${f.name} field: '${d.text}'`);
      case "one":
        values.add(d.first);
        break;
      case "span":
        populate(values, d.first, d.last, d.step);
        break;
      case "all":
        return range(f.min, f.max);
    }
  }
  return sorted(values);
}

const NORMALIZE: readonly (readonly [string, string])[] = [
  ["@yearly", "0 0 0 1 1 * *"],
  ["@annually", "0 0 0 1 1 * *"],
  ["@monthly", "0 0 0 1 * * *"],
  ["@weekly", "0 0 0 * * 0 *"],
  ["@daily", "0 0 0 * * * *"],
  ["@hourly", "0 0 * * * * *"],
];

/** cronexpr.Parse. Throws CronSyntaxError with cronexpr's message. */
export function parseCron(line: string): CronExpression {
  let cron = line;
  for (const [from, to] of NORMALIZE) cron = cron.replaceAll(from, to);
  const fields = cron.match(/\S+/g) ?? [];
  if (fields.length < 5) throw new CronSyntaxError("missing field(s)");
  const count = Math.min(fields.length, 7);
  let i = 0;
  const seconds = count === 7 ? genericField(fields[i++]!, SECOND) : [0];
  const minutes = genericField(fields[i++]!, MINUTE);
  const hours = genericField(fields[i++]!, HOUR);

  const daysOfMonth = new Set<number>();
  const workdaysOfMonth = new Set<number>();
  let lastDayOfMonth = false;
  let lastWorkdayOfMonth = false;
  let daysOfMonthRestricted = true;
  const domText = fields[i++]!;
  for (const d of parseField(domText, DOM)) {
    if (d.kind === "none") {
      const e = d.text.toLowerCase();
      const w = layout("^(%value%)w$", DOM.value).exec(e);
      if (e === "l") lastDayOfMonth = true;
      else if (e === "lw") lastWorkdayOfMonth = true;
      else if (w) workdaysOfMonth.add(DOM.atoi(w[1]!));
      else throw new CronSyntaxError(`syntax error in day-of-month field: '${d.text}'`);
    } else if (d.kind === "one") daysOfMonth.add(d.first);
    else {
      populate(daysOfMonth, d.first, d.last, d.kind === "span" ? d.step : 1);
      if (d.kind === "all") daysOfMonthRestricted = false;
    }
  }

  const months = genericField(fields[i++]!, MONTH);

  const daysOfWeek = new Set<number>();
  const specificWeekDaysOfWeek = new Set<number>();
  const lastWeekDaysOfWeek = new Set<number>();
  let daysOfWeekRestricted = true;
  for (const d of parseField(fields[i++]!, DOW)) {
    if (d.kind === "none") {
      const e = d.text.toLowerCase();
      const last = layout("^(%value%)l$", DOW.value).exec(e);
      const nth = layout("^(%value%)#([1-5])$", DOW.value).exec(e);
      if (last) lastWeekDaysOfWeek.add(DOW.atoi(last[1]!));
      else if (nth) specificWeekDaysOfWeek.add((DOW.atoi(nth[2]!) - 1) * 7 + (DOW.atoi(nth[1]!) % 7));
      else throw new CronSyntaxError(`syntax error in day-of-week field: '${d.text}'`);
    } else if (d.kind === "one") daysOfWeek.add(d.first);
    else if (d.kind === "span") populate(daysOfWeek, d.first, d.last === 0 ? 6 : d.last, d.step);
    else {
      populate(daysOfWeek, d.first, d.last, 1);
      daysOfWeekRestricted = false;
    }
  }

  const years = i < count ? genericField(fields[i]!, YEAR) : range(YEAR.min, YEAR.max);
  return {
    seconds,
    minutes,
    hours,
    daysOfMonth,
    workdaysOfMonth,
    lastDayOfMonth,
    lastWorkdayOfMonth,
    daysOfMonthRestricted,
    months,
    daysOfWeek,
    specificWeekDaysOfWeek,
    lastWeekDaysOfWeek,
    daysOfWeekRestricted,
    years,
  };
}

/** sort.SearchInts: the first index whose value is at least v. */
function search(list: readonly number[], v: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
const contains = (list: readonly number[], v: number) => list[search(list, v)] === v;

const NORMALIZED_OFFSETS = [
  [1, 8, 15, 22, 29],
  [2, 9, 16, 23, 30],
  [3, 10, 17, 24, 31],
  [4, 11, 18, 25],
  [5, 12, 19, 26],
  [6, 13, 20, 27],
  [7, 14, 21, 28],
];

const weekdayOf = (year: number, month: number, day: number) =>
  new Date(Date.UTC(year, month - 1, day)).getUTCDay();

/** The nearest weekday to a day of the month, staying within the month (cronexpr's workdayOfMonth). */
function workdayOfMonth(year: number, month: number, day: number, lastDay: number): number {
  const dow = weekdayOf(year, month, day);
  if (dow === 6) return day > 1 ? day - 1 : day + 2;
  if (dow === 0) return day < lastDay ? day + 1 : day - 2;
  return day;
}

function actualDaysOfMonth(expr: CronExpression, year: number, month: number): number[] {
  const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (!expr.daysOfMonthRestricted && !expr.daysOfWeekRestricted) return range(1, lastDay);
  const days = new Set<number>();
  if (expr.daysOfMonthRestricted) {
    if (expr.lastDayOfMonth) days.add(lastDay);
    if (expr.lastWorkdayOfMonth) days.add(workdayOfMonth(year, month, lastDay, lastDay));
    for (const v of expr.daysOfMonth) if (v <= lastDay) days.add(v);
    for (const v of expr.workdaysOfMonth) if (v <= lastDay) days.add(workdayOfMonth(year, month, v, lastDay));
  }
  if (expr.daysOfWeekRestricted) {
    let offset = 7 - weekdayOf(year, month, 1);
    for (const v of expr.daysOfWeek) {
      const w = NORMALIZED_OFFSETS[(offset + v) % 7]!;
      for (const d of w.slice(0, 4)) days.add(d);
      if (w.length > 4 && w[4]! <= lastDay) days.add(w[4]!);
    }
    for (const v of expr.specificWeekDaysOfWeek) {
      const d = 1 + 7 * Math.floor(v / 7) + ((offset + v) % 7);
      if (d <= lastDay) days.add(d);
    }
    const lastWeekOrigin = lastDay - 6;
    offset = 7 - weekdayOf(year, month, lastWeekOrigin);
    for (const v of expr.lastWeekDaysOfWeek) {
      const d = lastWeekOrigin + ((offset + v) % 7);
      if (d <= lastDay) days.add(d);
    }
  }
  return sorted(days);
}

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const truncateMinute = (ms: number) => ms - (((ms % MINUTE_MS) + MINUTE_MS) % MINUTE_MS);

/**
 * Expression.Next: the first instant after `fromMs` (Unix milliseconds)
 * that matches, read on the wall clock of `zone`; null when there is none
 * (past the last year the expression allows).
 */
export function nextCron(expr: CronExpression, fromMs: number, zone: string = UTC): number | null {
  let t = Math.floor(fromMs / 1000) * 1000 + 1000;
  const date = (y: number, mo: number, d: number, h: number, mi: number, s: number) =>
    goDate(y, mo, d, h, mi, s, zone);
  // Go's goto WRAP is a restart of this loop; a bound keeps a pathological
  // expression (February 30th every year) from looping for long.
  for (let guard = 0; guard < 100_000; guard++) {
    let w = wallClock(t, zone);
    let i = search(expr.years, w.year);
    if (i === expr.years.length) return null;
    if (w.year !== expr.years[i]) t = date(expr.years[i]!, expr.months[0]!, 1, 0, 0, 0);

    w = wallClock(t, zone);
    i = search(expr.months, w.month);
    if (i === expr.months.length) {
      t = date(w.year + 1, expr.months[0]!, 1, 0, 0, 0);
      continue;
    }
    if (w.month !== expr.months[i]) t = date(w.year, expr.months[i]!, 1, 0, 0, 0);

    w = wallClock(t, zone);
    const days = actualDaysOfMonth(expr, w.year, w.month);
    if (days.length === 0) {
      t = date(w.year, w.month + 1, 1, 0, 0, 0);
      continue;
    }
    i = search(days, w.day);
    if (i === days.length) {
      t = date(w.year, w.month + 1, 1, 0, 0, 0);
      continue;
    }
    if (w.day !== days[i]) {
      t = date(w.year, w.month, days[i]!, 0, 0, 0);
      // Midnight may not exist on a DST change day: back to the start of the day.
      const hour = wallClock(t, zone).hour;
      if (hour !== 0) t += (hour > 12 ? 24 - hour : -hour) * HOUR_MS;
    }

    if (timeZoneInDay(t, zone)) {
      const slow = slowClock(expr, t, zone);
      if (slow.wrap) {
        t = slow.t;
        continue;
      }
      return slow.t;
    }

    w = wallClock(t, zone);
    i = search(expr.hours, w.hour);
    if (i === expr.hours.length) {
      t = date(w.year, w.month, w.day + 1, 0, 0, 0);
      continue;
    }
    if (w.hour !== expr.hours[i])
      t = date(w.year, w.month, w.day, expr.hours[i]!, expr.minutes[0]!, expr.seconds[0]!);

    w = wallClock(t, zone);
    i = search(expr.minutes, w.minute);
    if (i === expr.minutes.length) {
      t = date(w.year, w.month, w.day, w.hour + 1, 0, 0);
      continue;
    }
    if (w.minute !== expr.minutes[i])
      t = date(w.year, w.month, w.day, w.hour, expr.minutes[i]!, expr.seconds[0]!);

    w = wallClock(t, zone);
    i = search(expr.seconds, w.second);
    if (i === expr.seconds.length) {
      t = date(w.year, w.month, w.day, w.hour, w.minute + 1, 0);
      continue;
    }
    if (w.second !== expr.seconds[i]) t = date(w.year, w.month, w.day, w.hour, w.minute, expr.seconds[i]!);
    return t;
  }
  return null;
}

/** Whether the zone's offset changes within a day of t (cronexpr's timeZoneInDay). */
function timeZoneInDay(t: number, zone: string): boolean {
  if (zone === UTC) return false;
  const w = wallClock(t, zone);
  const before = goDate(w.year, w.month, w.day - 1, w.hour, w.minute, w.second, zone);
  const after = goDate(w.year, w.month, w.day + 1, w.hour, w.minute, w.second, zone);
  return offsetAt(before, zone) !== offsetAt(after, zone);
}

/** cronexpr's SLOW_CLOCK: on a day with a DST change, hours and minutes are walked one by one. */
function slowClock(expr: CronExpression, start: number, zone: string): { t: number; wrap: boolean } {
  let t = start;
  while (!contains(expr.hours, wallClock(t, zone).hour)) {
    const hourBefore = wallClock(t, zone).hour;
    t += HOUR_MS;
    if (wallClock(t, zone).hour === hourBefore) t += HOUR_MS;
    t = truncateMinute(t);
    const minute = wallClock(t, zone).minute;
    if (minute !== 0) t -= minute * MINUTE_MS;
    const w = wallClock(t, zone);
    if (w.hour === 0) return { t: goDate(w.year, w.month, w.day, 0, 0, 0, zone), wrap: true };
  }
  while (!contains(expr.minutes, wallClock(t, zone).minute)) {
    const hoursBefore = wallClock(t, zone).hour;
    t = truncateMinute(t) + MINUTE_MS;
    if (hoursBefore !== wallClock(t, zone).hour) return { t, wrap: true };
  }
  const second = wallClock(t, zone).second;
  t = truncateMinute(t);
  const i = search(expr.seconds, second);
  if (i === expr.seconds.length) return { t: t + MINUTE_MS, wrap: true };
  return { t: t + expr.seconds[i]! * 1000, wrap: false };
}
