import type { RawLevel, RawNamed, RawNamespace } from "./policy-decode.ts";

/**
 * Go's `%#v` of the policy structs, as Nomad's parse errors print the
 * offending block: `Invalid namespace name: &acl.NamespacePolicy{Name:"a b",
 * Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}`.
 */

/**
 * Go prints a set pointer field as its address, which changes from run to
 * run; this fixed stand-in keeps the text deterministic.
 */
const POINTER = "0xc000010000";

const SIMPLE_ESCAPES: Record<string, string> = {
  "\x07": "\\a",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\v": "\\v",
  '"': '\\"',
  "\\": "\\\\",
};

/** Go's strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** Go's strconv.Quote. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const simple = SIMPLE_ESCAPES[ch];
    if (simple !== undefined) out += simple;
    else if (PRINTABLE.test(ch)) out += ch;
    else {
      const c = ch.codePointAt(0)!;
      if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, "0")}`;
      else if (c < 0x10000) out += `\\u${c.toString(16).padStart(4, "0")}`;
      else out += `\\U${c.toString(16).padStart(8, "0")}`;
    }
  }
  return `${out}"`;
}

export function goStrings(xs: readonly string[] | null): string {
  if (xs === null) return "[]string(nil)";
  return `[]string{${xs.map(goQuote).join(", ")}}`;
}

export function goNamespace(ns: RawNamespace): string {
  const vars = ns.Variables === null ? "nil" : POINTER;
  return (
    `&acl.NamespacePolicy{Name:${goQuote(ns.Name)}, Policy:${goQuote(ns.Policy)}, ` +
    `Capabilities:${goStrings(ns.Capabilities)}, Variables:(*acl.VariablesPolicy)(${vars})}`
  );
}

export function goHostVolume(hv: RawNamed): string {
  return `&acl.HostVolumePolicy{Name:${goQuote(hv.Name)}, Policy:${goQuote(hv.Policy)}, Capabilities:${goStrings(hv.Capabilities)}}`;
}

/** `&acl.AgentPolicy{Policy:"foo"}` and the like; `type` is the Go struct name. */
export function goLevel(type: string, p: RawLevel): string {
  return `&acl.${type}{Policy:${goQuote(p.Policy)}}`;
}
