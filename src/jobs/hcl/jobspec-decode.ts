import { parseDuration } from "../../util/duration.ts";
import { API_STRUCTS, type ApiField } from "./api-schema.ts";
import { type BlockPath, pathKey } from "./hcl-block-order.ts";
import { type EvalScope, evaluate, type HclValue, JobspecError, unsupported } from "./hcl-expressions.ts";

/**
 * jobspec2's decoding of a job block into Nomad's api.Job, driven by the
 * api structs' `hcl:` tags (api-schema.ts) as gohcl is, with jobspec2's
 * special cases: constraint and affinity shorthands, `meta`/`env` also as
 * attributes, driver `config` (and scaling `policy`) as free-form maps whose
 * nested blocks become lists of objects, group-level `vault`, task-level
 * `scaling "cpu"/"mem"` blocks, durations as Go duration strings or
 * nanoseconds. The result is the api.Job as JSON, every field present as Go
 * encodes it (null for unset pointers, lists and maps).
 */

export type Json = Record<string, unknown>;
type Body = Record<string, unknown>;

export interface DecodeContext {
  readonly scope: EvalScope;
  /** Where each labeled block starts in the source (hcl-block-order.ts). */
  readonly order: ReadonlyMap<string, number>;
}

/** A block in the job: `where` for people, `path` (block types and labels) to find its source order. */
export interface Loc {
  readonly where: string;
  readonly path: BlockPath;
}

/** A labeled block's bodies as hcl2json nests them ({label: {label2: [body]}}), flattened. */
interface LabeledBody {
  readonly labels: readonly string[];
  readonly body: Body;
  readonly path: BlockPath;
}

const zeroOf = (type: string): unknown => {
  if (type.startsWith("*") || type.startsWith("[]") || type.startsWith("map[") || type === "interface{}") {
    return null;
  }
  if (type === "string") return "";
  if (type === "bool") return false;
  if (/^(u?int(8|16|32|64)?|float(32|64)|time\.Duration)$/.test(type)) return 0;
  if (API_STRUCTS[type]) return zeroStruct(type);
  return null;
};

function zeroStruct(name: string): Json {
  const out: Json = {};
  for (const f of API_STRUCTS[name] ?? []) if (!f.omitempty) out[f.go] = zeroOf(f.type);
  return out;
}

function labelCount(struct: string): number {
  return (API_STRUCTS[struct] ?? []).filter((f) => f.kind === "label").length;
}

/** `*Foo`, `[]*Foo`, `[]Foo`, `map[string]*Foo` -> `Foo` when Foo is a struct. */
function structOf(type: string): string | undefined {
  const base = type
    .replace(/^map\[string\]/, "")
    .replace(/^\[\]/, "")
    .replace(/^\*/, "");
  return API_STRUCTS[base] ? base : undefined;
}

/** The bodies of a block field, with their labels, in the order written. */
function blockBodies(
  ctx: DecodeContext,
  raw: unknown,
  labels: number,
  name: string,
  loc: Loc,
): LabeledBody[] {
  const where = loc.where;
  if (labels === 0) {
    if (isLabeledBlocks(raw)) {
      throw new JobspecError(
        `${where}: Extraneous label for ${name}; No labels are expected for ${name} blocks.`,
      );
    }
    if (!Array.isArray(raw)) {
      throw new JobspecError(
        `${where}: Unsupported argument; An argument named "${name}" is not expected here. Did you mean to define a block of type "${name}"?`,
      );
    }
    return raw.map((b, i) => ({
      labels: [],
      body: asBody(b, name, where),
      path: [...loc.path, `${name}#${i}`],
    }));
  }
  const out: LabeledBody[] = [];
  const walk = (v: unknown, taken: string[]) => {
    if (taken.length === labels) {
      if (!Array.isArray(v)) {
        throw new JobspecError(
          `${where}: Extraneous label for ${name}; Only ${labels} labels (name) are expected for ${name} blocks.`,
        );
      }
      const path = [...loc.path, name, ...taken];
      for (const b of v) out.push({ labels: taken, body: asBody(b, name, where), path });
      return;
    }
    if (v === null || typeof v !== "object" || Array.isArray(v)) {
      throw new JobspecError(
        `${where}: Missing name for ${name}; All ${name} blocks must have ${labels} labels (name).`,
      );
    }
    for (const [label, rest] of Object.entries(v)) walk(rest, [...taken, label]);
  };
  walk(raw, []);
  // hcl2json sorts labels; the source says the order (the sort is stable for blocks with the same labels).
  const rank = (b: LabeledBody) => ctx.order.get(pathKey(b.path)) ?? Number.MAX_SAFE_INTEGER;
  return out.sort((a, b) => rank(a) - rank(b));
}

function asBody(b: unknown, name: string, where: string): Body {
  if (b === null || typeof b !== "object" || Array.isArray(b)) {
    throw new JobspecError(`${where}: ${name} block is malformed`);
  }
  return b as Body;
}

/** Decodes `body` into the api struct `name`; `labels` fill its label fields in order. */
export function decodeStruct(
  ctx: DecodeContext,
  name: string,
  body: Body,
  labels: readonly string[],
  loc: Loc,
  handled: ReadonlySet<string> = new Set(),
): Json {
  const where = loc.where;
  const fields = API_STRUCTS[name] ?? [];
  const out = zeroStruct(name);
  const byHcl = new Map<string, ApiField>();
  let labelIndex = 0;
  for (const f of fields) {
    if (f.kind === "label") {
      out[f.go] = labels[labelIndex++] ?? zeroOf(f.type);
    } else if (f.hcl !== undefined) byHcl.set(f.hcl, f);
  }
  for (const [key, raw] of Object.entries(body)) {
    if (handled.has(key)) continue;
    if (key === "dynamic") throw unsupported("dynamic block", where);
    const f = byHcl.get(key);
    if (!f) {
      throw new JobspecError(
        Array.isArray(raw) && raw.every((b) => b !== null && typeof b === "object")
          ? `${where}: Unsupported block type; Blocks of type "${key}" are not expected here.`
          : `${where}: Unsupported argument; An argument named "${key}" is not expected here.`,
      );
    }
    const at = `${where} > ${key}`;
    out[f.go] =
      f.kind === "block"
        ? decodeBlockField(ctx, f, key, raw, loc)
        : decodeValue(f.type, evaluate(raw, ctx.scope, at), at);
  }
  for (const f of fields) {
    // gohcl: an untagged-kind attribute is required unless it is a pointer.
    if (f.kind === "attr" && f.hcl && !f.type.startsWith("*") && !Object.hasOwn(body, f.hcl)) {
      throw new JobspecError(
        `${where}: Missing required argument; The argument "${f.hcl}" is required, but no definition was found.`,
      );
    }
  }
  return out;
}

function decodeBlockField(ctx: DecodeContext, f: ApiField, key: string, raw: unknown, parent: Loc): unknown {
  const t = f.type;
  const where = `${parent.where} > ${key}`;
  if (t === "map[string]interface{}" || t === "map[string]any") {
    const bodies = blockBodies(ctx, raw, 0, key, parent);
    if (bodies.length > 1) duplicateBlock(key, where);
    return configBody(ctx, bodies[0]!.body, { where, path: bodies[0]!.path });
  }
  if (t === "map[string]string" || t === "map[string][]string") {
    return stringMap(ctx, raw, key, t === "map[string][]string" ? "[]string" : "string", where);
  }
  const struct = structOf(t);
  if (!struct) throw new JobspecError(`${where}: cannot decode a block into ${t}`);
  const decoder = BLOCK_DECODERS[struct] ?? decodeStruct;
  const bodies = blockBodies(ctx, raw, labelCount(struct), key, parent);
  const decodeOne = (b: LabeledBody) => {
    const label = b.labels.length > 0 ? ` "${b.labels.join('" "')}"` : "";
    return decoder(ctx, struct, b.body, b.labels, { where: `${where}${label}`, path: b.path });
  };
  if (t.startsWith("map[string]")) {
    const out: Json = {};
    for (const b of bodies) {
      if (Object.hasOwn(out, b.labels[0]!)) duplicateBlock(`${key} "${b.labels[0]}"`, where);
      out[b.labels[0]!] = decodeOne(b);
    }
    return out;
  }
  if (t.startsWith("[]")) return bodies.map(decodeOne);
  if (bodies.length > 1) duplicateBlock(key, where);
  return decodeOne(bodies[0]!);
}

function duplicateBlock(key: string, where: string): never {
  throw new JobspecError(`${where}: Duplicate ${key} block; Only one ${key} block is allowed.`);
}

/** A block or an attribute of string values (meta, env, options, headers...). */
export function stringMap(
  ctx: DecodeContext,
  raw: unknown,
  key: string,
  elem: "string" | "[]string",
  where: string,
): Json {
  let body: unknown = raw;
  if (Array.isArray(raw)) {
    if (raw.length > 1) duplicateBlock(key, where);
    body = raw[0] ?? {};
  } else if (typeof raw === "string") {
    // An attribute whose value is an expression (`meta = var.meta`).
    body = evaluate(raw, ctx.scope, where);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new JobspecError(`${where}: Unsuitable value type; a map of strings is required`);
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(body)) {
    out[k] = decodeValue(elem, evaluate(v, ctx.scope, `${where}.${k}`), `${where}.${k}`);
  }
  return out;
}

/**
 * A free-form block (a driver's config, a scaling policy): jobspec2 turns
 * nested blocks into lists of objects and wraps object values of a block's
 * attributes in a list (hclutil.BlocksAsAttrs). hcl2json renders a nested
 * block and an attribute holding a list of objects alike: both are taken as
 * blocks.
 */
function configBody(ctx: DecodeContext, body: Body, loc: Loc): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === "dynamic") throw unsupported("dynamic block", loc.where);
    const at: Loc = { where: `${loc.where}.${k}`, path: loc.path };
    if (isLabeledBlocks(v)) out[k] = labeledBlocks(ctx, k, v as Body, at);
    else out[k] = configValue(ctx, v, true, at);
  }
  return out;
}

function configValue(ctx: DecodeContext, v: unknown, bodyLevel: boolean, loc: Loc): unknown {
  const { where } = loc;
  if (Array.isArray(v)) {
    if (v.length > 0 && v.every(isPlainObject)) {
      const type = where.slice(where.lastIndexOf(".") + 1);
      return v.map((b, i) =>
        configBody(ctx, b as Body, { where: `${where}[${i}]`, path: [...loc.path, `${type}#${i}`] }),
      );
    }
    return v.map((x, i) => configValue(ctx, x, false, { where: `${where}[${i}]`, path: loc.path }));
  }
  if (isPlainObject(v)) {
    const o: Json = {};
    for (const [k, x] of Object.entries(v))
      o[k] = configValue(ctx, x, false, { where: `${where}.${k}`, path: loc.path });
    return bodyLevel ? [o] : o;
  }
  return evaluate(v, ctx.scope, where);
}

const isPlainObject = (x: unknown): x is Body => x !== null && typeof x === "object" && !Array.isArray(x);

/** hcl2json's form of labeled blocks: labels as keys, down to lists of bodies. */
function isLabeledBlocks(v: unknown): boolean {
  if (!isPlainObject(v)) return false;
  const values = Object.values(v);
  return (
    values.length > 0 &&
    values.every((x) => (Array.isArray(x) && x.length > 0 && x.every(isPlainObject)) || isLabeledBlocks(x))
  );
}

/**
 * Labeled blocks in a free-form body, as jobspec2's BlocksAsAttrs makes them:
 * one list item per block, its labels nested as single-item lists
 * (`a "x" "y" {k = 1}` is `a = [{x = [{y = [{k = 1}]}]}]`), in source order.
 */
function labeledBlocks(ctx: DecodeContext, type: string, v: Body, loc: Loc): Json[] {
  const items: { rank: number; value: Json }[] = [];
  const walk = (node: unknown, labels: string[]) => {
    if (Array.isArray(node)) {
      const path = [...loc.path, type, ...labels];
      const rank = ctx.order.get(pathKey(path)) ?? Number.MAX_SAFE_INTEGER;
      for (const body of node) {
        let value: Json | Json[] = [configBody(ctx, body as Body, { where: loc.where, path })];
        for (let i = labels.length - 1; i >= 0; i--) value = [{ [labels[i]!]: value }];
        items.push({ rank, value: (value as Json[])[0]! });
      }
      return;
    }
    for (const [label, rest] of Object.entries(node as Body)) walk(rest, [...labels, label]);
  };
  walk(v, []);
  return items.sort((a, b) => a.rank - b.rank).map((i) => i.value);
}

/** An attribute's value as the Go type of its field, converted as cty and gocty convert. */
export function decodeValue(type: string, v: HclValue, where: string): unknown {
  const pointer = type.startsWith("*");
  const base = pointer ? type.slice(1) : type;
  if (v === null) return pointer || base.startsWith("[]") || base.startsWith("map[") ? null : zeroOf(base);
  const unsuitable = (what: string): never => {
    throw new JobspecError(`${where}: Unsuitable value type; Unsuitable value: ${what}`);
  };
  switch (base) {
    case "string":
      if (typeof v === "string") return v;
      if (typeof v === "number" || typeof v === "boolean") return String(v);
      return unsuitable("string required");
    case "bool":
      if (typeof v === "boolean") return v;
      if (v === "true" || v === "false") return v === "true";
      return unsuitable("bool required");
    case "time.Duration": {
      if (typeof v === "number") return v;
      if (typeof v !== "string") return unsuitable(`expected a string but found ${kindOf(v)}`);
      const ms = v.trim() === "" ? undefined : parseDuration(v);
      if (ms === undefined) {
        throw new JobspecError(
          `${where}: Unsuitable value type; Unsuitable duration value: time: invalid duration "${v}"`,
        );
      }
      return Math.round(ms * 1e6);
    }
    case "[]string":
      if (!Array.isArray(v)) return unsuitable("list of string required");
      return v.map((x, i) => decodeValue("string", x, `${where}[${i}]`));
    case "map[string]string":
      if (typeof v !== "object" || Array.isArray(v)) return unsuitable("map of string required");
      return Object.fromEntries(
        Object.entries(v).map(([k, x]) => [k, decodeValue("string", x, `${where}.${k}`)]),
      );
    case "interface{}":
    case "map[string]interface{}":
      return v;
  }
  if (/^u?int(8|16|32|64)?$/.test(base)) {
    const n = typeof v === "string" && /^-?[0-9]+(\.[0-9]+)?$/.test(v.trim()) ? Number(v) : v;
    if (typeof n !== "number") return unsuitable("number required");
    if (!Number.isInteger(n)) return unsuitable(`value must be a whole number, between ${base} bounds`);
    if (base.startsWith("u") && n < 0) return unsuitable("value must be positive");
    return n;
  }
  return unsuitable(`cannot decode into ${type}`);
}

function kindOf(v: HclValue): string {
  if (Array.isArray(v)) return "tuple";
  return typeof v === "object" ? "object" : typeof v;
}

type BlockDecoder = (
  ctx: DecodeContext,
  struct: string,
  body: Body,
  labels: readonly string[],
  loc: Loc,
) => Json;

const CONSTRAINT_KEYS = [
  "attribute",
  "value",
  "operator",
  "distinct_property",
  "distinct_hosts",
  "regexp",
  "version",
  "semver",
  "set_contains",
  "set_contains_all",
  "set_contains_any",
  "is_set",
  "is_not_set",
];
const AFFINITY_KEYS = [
  "attribute",
  "value",
  "operator",
  "weight",
  "version",
  "semver",
  "regexp",
  "set_contains",
  "set_contains_all",
  "set_contains_any",
];

function shorthandAttrs(ctx: DecodeContext, body: Body, allowed: readonly string[], where: string) {
  const values = new Map<string, HclValue>();
  for (const [k, raw] of Object.entries(body)) {
    if (!allowed.includes(k)) {
      throw new JobspecError(
        `${where}: Unsupported argument; An argument named "${k}" is not expected here.`,
      );
    }
    values.set(k, evaluate(raw, ctx.scope, `${where} > ${k}`));
  }
  const str = (k: string) => {
    const v = values.get(k);
    return v === undefined || v === null ? "" : (decodeValue("string", v, `${where} > ${k}`) as string);
  };
  return { values, str };
}

/** jobspec2's decodeConstraint: the shorthand attributes set the operand. */
const decodeConstraint: BlockDecoder = (ctx, _struct, body, _labels, { where }) => {
  const { values, str } = shorthandAttrs(ctx, body, CONSTRAINT_KEYS, where);
  const c = { LTarget: str("attribute"), RTarget: str("value"), Operand: str("operator") };
  for (const op of ["version", "semver", "regexp", "set_contains"]) {
    if (str(op) !== "") {
      c.Operand = op;
      c.RTarget = str(op);
    }
  }
  const distinct = values.get("distinct_hosts");
  if (distinct !== undefined && distinct !== null) {
    c.Operand = "distinct_hosts";
    c.RTarget = String(decodeValue("bool", distinct, `${where} > distinct_hosts`));
  }
  if (str("distinct_property") !== "") {
    c.Operand = "distinct_property";
    c.LTarget = str("distinct_property");
  }
  if (c.Operand === "") c.Operand = "=";
  return c;
};

/** jobspec2's decodeAffinity. */
const decodeAffinity: BlockDecoder = (ctx, _struct, body, _labels, { where }) => {
  const { values, str } = shorthandAttrs(ctx, body, AFFINITY_KEYS, where);
  const a: Json = {
    LTarget: str("attribute"),
    RTarget: str("value"),
    Operand: str("operator"),
    Weight: null,
  };
  const weight = values.get("weight");
  if (weight !== undefined && weight !== null) a.Weight = decodeValue("int8", weight, `${where} > weight`);
  for (const op of ["version", "semver", "regexp", "set_contains_any", "set_contains_all", "set_contains"]) {
    if (str(op) !== "") {
      a.Operand = op;
      a.RTarget = str(op);
    }
  }
  if (a.Operand === "") a.Operand = "=";
  return a;
};

/** jobspec2's decodeTaskGroup: `meta` as an attribute too, a group `vault` for its tasks, the scaling type. */
const decodeTaskGroup: BlockDecoder = (ctx, struct, body, labels, loc) => {
  const where = loc.where;
  const tg = decodeStruct(ctx, struct, body, labels, loc, new Set(["meta", "vault"]));
  if (body.meta !== undefined) tg.Meta = stringMap(ctx, body.meta, "meta", "string", `${where} > meta`);
  if (body.vault !== undefined) {
    const bodies = blockBodies(ctx, body.vault, 0, "vault", loc);
    if (bodies.length > 1) duplicateBlock("vault", where);
    const vault = decodeStruct(ctx, "Vault", bodies[0]!.body, [], {
      where: `${where} > vault`,
      path: bodies[0]!.path,
    });
    for (const t of (tg.Tasks as Json[] | null) ?? []) if (t.Vault === null) t.Vault = vault;
  }
  const scaling = tg.Scaling as Json | null;
  if (scaling) {
    const raw = blockBodies(ctx, body.scaling, 0, "scaling", loc)[0]!.body;
    if (scaling.Type === "") scaling.Type = "horizontal";
    if (scaling.Type !== "horizontal" && raw.type !== undefined) {
      throw new JobspecError(
        `${where} > scaling: Invalid group scaling type; task group scaling policy had invalid type: "${scaling.Type}"`,
      );
    }
    if (scaling.Max === null) {
      throw new JobspecError(
        `${where} > scaling: Missing required argument; The argument "max" is required, but no definition was found.`,
      );
    }
  }
  return tg;
};

/** jobspec2's decodeTask: `env` and `meta` as attributes too, `scaling "cpu"`/`"mem"` as vertical policies. */
const decodeTask: BlockDecoder = (ctx, struct, body, labels, loc) => {
  const where = loc.where;
  const t = decodeStruct(ctx, struct, body, labels, loc, new Set(["env", "meta", "scaling"]));
  if (body.env !== undefined) t.Env = stringMap(ctx, body.env, "env", "string", `${where} > env`);
  if (body.meta !== undefined) t.Meta = stringMap(ctx, body.meta, "meta", "string", `${where} > meta`);
  if (body.scaling !== undefined) {
    const policies: Json[] = [];
    const seen = new Set<string>();
    for (const b of blockBodies(ctx, body.scaling, 1, "scaling", loc)) {
      const label = b.labels[0]!.toLowerCase();
      const at = `${where} > scaling "${b.labels[0]}"`;
      const type = label === "cpu" ? "vertical_cpu" : label === "mem" ? "vertical_mem" : undefined;
      if (!type)
        throw new JobspecError(
          `${at}: Invalid scaling policy name; scaling policy name must be "cpu" or "mem"`,
        );
      if (seen.has(label)) {
        throw new JobspecError(
          `${at}: Duplicate scaling "${label}" block; Only one scaling ${label} block is allowed.`,
        );
      }
      seen.add(label);
      const p = decodeStruct(ctx, "ScalingPolicy", b.body, [], { where: at, path: b.path });
      if (p.Type === "") p.Type = type;
      else if (p.Type !== type) {
        throw new JobspecError(
          `${at}: Invalid scaling policy type; Invalid policy type, expected "${p.Type}" but found "${type}"`,
        );
      }
      policies.push(p);
    }
    t.ScalingPolicies = policies;
  }
  return t;
};

const BLOCK_DECODERS: Readonly<Record<string, BlockDecoder>> = {
  Constraint: decodeConstraint,
  Affinity: decodeAffinity,
  TaskGroup: decodeTaskGroup,
  Task: decodeTask,
};

/** Decodes a task block (jobspec2 allows them at the job's top level, each its own group). */
export function decodeTaskBlock(ctx: DecodeContext, body: Body, name: string, loc: Loc): Json {
  return decodeTask(ctx, "Task", body, [name], loc);
}
