import { type EvalScope, evaluate, type HclValue, JobspecError, unsupported } from "./hcl-expressions.ts";

/**
 * jobspec2's input variables and locals: `variable "name" { type, default,
 * description }` blocks and `variables { name = default }` blocks, their
 * values from the request's Variables (a var file's content: `name = value`
 * lines, or JSON), then `locals` evaluated against them. Types are checked
 * and converted as cty converts them for string, number, bool, any, and
 * list/set/map of those; object and tuple types accept any value of their
 * kind. Variable validation blocks (their conditions need functions) are
 * refused.
 */

type Body = Record<string, unknown>;

const NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const BAD_IDENTIFIER =
  "A name must start with a letter or underscore and may contain only letters, digits, underscores, and dashes.";

type VarType =
  | { readonly kind: "string" | "number" | "bool" | "any" }
  | { readonly kind: "list" | "set" | "map"; readonly elem: VarType }
  | { readonly kind: "object" | "tuple" };

interface Variable {
  readonly type: VarType | undefined;
  value: HclValue | undefined;
  set: boolean;
}

/**
 * The scope of the job's expressions: its variables with their values and
 * its locals. `varContent` is the request's Variables (already parsed, for
 * HCL content), or the raw text when it is JSON.
 */
export function resolveScope(doc: Body, varContent: Body | undefined): EvalScope {
  const variables = new Map<string, Variable>();
  for (const [name, bodies] of Object.entries(asObject(doc.variable, "variable"))) {
    const list = blockList(bodies, `variable "${name}"`);
    if (list.length > 1 || variables.has(name)) duplicate(name);
    if (!NAME.test(name)) throw new JobspecError(`Invalid variable name; ${BAD_IDENTIFIER}`);
    variables.set(name, variableBlock(name, list[0]!));
  }
  for (const body of blockList(doc.variables ?? [], "variables")) {
    for (const [name, raw] of Object.entries(body)) {
      if (variables.has(name)) duplicate(name);
      variables.set(name, {
        type: undefined,
        value: evaluate(raw, undefined, `variables.${name}`),
        set: true,
      });
    }
  }
  if (varContent) {
    if (varContent.variable !== undefined) {
      const name = Object.keys(asObject(varContent.variable, "variable"))[0] ?? "";
      throw new JobspecError(
        `Variable declaration in a .var file; A .var file is used to assign values to variables that have already been declared in job files, not to declare new variables. To declare variable "${name}", place this block in one of your job files`,
      );
    }
    for (const [name, raw] of Object.entries(varContent)) {
      const v = variables.get(name);
      // Not strict (the HTTP parse): a value for an undeclared variable is only a warning in Nomad.
      if (!v) continue;
      const value = evaluate(raw, undefined, `variable ${name}`);
      v.value = v.type ? convertTo(value, v.type, (why) => invalidValue(name, why)) : value;
      v.set = true;
    }
  }
  const vars: Record<string, HclValue> = {};
  for (const [name, v] of variables) {
    if (!v.set) {
      throw new JobspecError(
        `Unset variable "${name}"; A used variable must be set or have a default value; see https://www.nomadproject.io/docs/job-specification/hcl2/variables for details.`,
      );
    }
    vars[name] = v.value ?? null;
  }
  return { vars, locals: evaluateLocals(doc.locals, vars) };
}

function variableBlock(name: string, body: Body): Variable {
  for (const key of Object.keys(body)) {
    if (key === "validation") throw unsupported("variable validation block", `variable "${name}"`);
    if (key !== "description" && key !== "default" && key !== "type") {
      throw new JobspecError(`Unsupported argument; An argument named "${key}" is not expected here.`);
    }
  }
  const type = body.type === undefined ? undefined : typeOf(body.type, name);
  if (!Object.hasOwn(body, "default")) return { type, value: undefined, set: false };
  const raw = evaluate(body.default, undefined, `variable "${name}" default`);
  const value = type
    ? convertTo(raw, type, (why) => {
        throw new JobspecError(
          `Invalid default value for variable; This default value is not compatible with the variable's type constraint: ${why}.`,
        );
      })
    : raw;
  return { type, value, set: true };
}

/** A type constraint, as hcl2json renders it: `${string}`, `${list(number)}`, ... */
function typeOf(raw: unknown, name: string): VarType {
  const text = typeof raw === "string" ? raw.replace(/^\$\{(.*)\}$/s, "$1").replace(/\s+/g, "") : "";
  const parsed = parseType(text);
  if (!parsed) throw unsupported(`type constraint "${text}"`, `variable "${name}"`);
  return parsed;
}

function parseType(t: string): VarType | undefined {
  if (t === "string" || t === "number" || t === "bool" || t === "any") return { kind: t };
  const m = /^(list|set|map)\((.*)\)$/.exec(t);
  if (m) {
    const elem = parseType(m[2]!);
    return elem ? { kind: m[1] as "list" | "set" | "map", elem } : undefined;
  }
  if (/^object\(\{.*\}\)$/.test(t)) return { kind: "object" };
  if (/^tuple\(\[.*\]\)$/.test(t)) return { kind: "tuple" };
  return undefined;
}

/** cty's convert.Convert for the types above; `fail` gets cty's reason. */
function convertTo(v: HclValue, t: VarType, fail: (why: string) => never): HclValue {
  if (v === null || t.kind === "any") return v;
  switch (t.kind) {
    case "string":
      if (typeof v === "string") return v;
      if (typeof v === "number" || typeof v === "boolean") return String(v);
      return fail("string required");
    case "number":
      if (typeof v === "number") return v;
      if (typeof v === "string" && /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(v.trim())) return Number(v);
      return fail("a number is required");
    case "bool":
      if (typeof v === "boolean") return v;
      if (v === "true" || v === "false") return v === "true";
      return fail("a bool is required");
    case "list":
    case "set":
      if (!Array.isArray(v)) return fail(`${t.kind} of ${typeName(t.elem)} required`);
      return v.map((x) => convertTo(x, t.elem, fail));
    case "map":
      if (typeof v !== "object" || Array.isArray(v)) return fail(`map of ${typeName(t.elem)} required`);
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, convertTo(x, t.elem, fail)]));
    case "object":
      return typeof v === "object" && !Array.isArray(v) ? v : fail("object required");
    case "tuple":
      return Array.isArray(v) ? v : fail("tuple required");
  }
}

function typeName(t: VarType): string {
  return "elem" in t ? `${t.kind} of ${typeName(t.elem)}` : t.kind;
}

function invalidValue(name: string, why: string): never {
  throw new JobspecError(
    `Invalid value for variable; The value for ${name} is not compatible with the variable's type constraint: ${why}.`,
  );
}

/** jobspec2's evaluateLocalVariables: a local that names one not yet known is tried again after the others. */
function evaluateLocals(raw: unknown, vars: Readonly<Record<string, HclValue>>): Record<string, HclValue> {
  const pending: [string, unknown][] = [];
  const seen = new Set<string>();
  for (const body of blockList(raw ?? [], "locals")) {
    for (const [name, expr] of Object.entries(body)) {
      if (seen.has(name)) {
        throw new JobspecError(`Duplicate value in locals; Duplicate ${name} definition found.`);
      }
      seen.add(name);
      pending.push([name, expr]);
    }
  }
  const locals: Record<string, HclValue> = {};
  while (pending.length > 0) {
    let progressed = false;
    let lastError: Error | undefined;
    for (let i = 0; i < pending.length; ) {
      const [name, expr] = pending[i]!;
      try {
        locals[name] = evaluate(expr, { vars, locals }, `locals.${name}`);
        pending.splice(i, 1);
        progressed = true;
      } catch (err) {
        lastError = err as Error;
        i++;
      }
    }
    if (!progressed) throw lastError!;
  }
  return locals;
}

function duplicate(name: string): never {
  throw new JobspecError(`Duplicate variable; Duplicate ${name} variable definition found.`);
}

function asObject(v: unknown, what: string): Body {
  if (v === undefined) return {};
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    throw new JobspecError(`Unsupported argument; An argument named "${what}" is not expected here.`);
  }
  return v as Body;
}

/** hcl2json renders blocks as lists of bodies; anything else is not a block. */
export function blockList(v: unknown, what: string): Body[] {
  if (!Array.isArray(v) || v.some((b) => b === null || typeof b !== "object" || Array.isArray(b))) {
    throw new JobspecError(`Unsupported argument; An argument named "${what}" is not expected here.`);
  }
  return v as Body[];
}
