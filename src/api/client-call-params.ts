import { parseGoBool } from "../query/filter/go-strconv.ts";

/*
 * The query parameters of Nomad's client routes, read as its handlers read
 * them (url.Values.Get, strconv): each parse error is the text Nomad puts in
 * its answer, the caller picks the status as Nomad's handler does.
 */

/** url.Values.Get: the first value, or "" when absent. */
export function queryText(query: unknown, name: string): string {
  const raw = (query as Record<string, unknown> | undefined)?.[name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return typeof value === "string" ? value : "";
}

/** strconv.ParseInt(s, 10, 64), as a number (offsets and limits stay far below 2^53 in practice). */
export function parseInt64(text: string): { ok: true; value: number } | { ok: false; error: string } {
  if (!/^[+-]?[0-9]+$/.test(text)) {
    return { ok: false, error: `strconv.ParseInt: parsing ${JSON.stringify(text)}: invalid syntax` };
  }
  const value = BigInt(text);
  if (value > (1n << 63n) - 1n || value < -(1n << 63n)) {
    return { ok: false, error: `strconv.ParseInt: parsing ${JSON.stringify(text)}: value out of range` };
  }
  return { ok: true, value: Number(value) };
}

/** strconv.ParseBool of a parameter that is set: its value, or the parse error's text. */
export function parseBool(text: string): { ok: true; value: boolean } | { ok: false; error: string } {
  return parseGoBool(text);
}
