/**
 * The expressions of an HCL2 job spec, from hcl2json's form. hcl2json gives
 * literals as JSON and every other expression as its source text wrapped in
 * `${...}` (a template such as `"x-${var.y}"` stays as written). This
 * evaluates the subset a job spec needs without HCL's evaluator:
 *
 * - literals: strings, numbers, booleans, null, lists and objects of them;
 * - `var.<name>` and `local.<name>`, with attribute and index steps
 *   (`var.ports[0]`, `var.meta["team"]`, `local.tags.env`);
 * - string templates interpolating those;
 * - references to anything else (`attr.kernel.name`, `node.unique.id`,
 *   `meta.rack`, `NOMAD_PORT_http`, `env["HOME"]`...) are left as written,
 *   `${...}` included, for Nomad's runtime to interpolate, as jobspec2's
 *   UndefinedVariable hook leaves them.
 *
 * Function calls, operators, conditionals, `for` expressions, splats and
 * template directives (`%{ if }`) are refused with an error naming the
 * expression and where it is.
 */

export type HclValue = string | number | boolean | null | HclValue[] | { [key: string]: HclValue };

export interface EvalScope {
  readonly vars: Readonly<Record<string, HclValue>>;
  readonly locals: Readonly<Record<string, HclValue>>;
}

/** An error in the job spec: answered as Nomad's "Failed to parse job: ..." 400. */
export class JobspecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JobspecError";
  }
}

const UNSUPPORTED_HINT =
  "chronomad evaluates literals, var.<name> and local.<name> (with .attribute and [index] steps) " +
  "and leaves other references such as attr.*, node.*, meta.* and NOMAD_* to Nomad's runtime; " +
  "functions, operators, conditionals, for expressions, splats and template directives are not supported";

export function unsupported(what: string, where: string): JobspecError {
  return new JobspecError(`${where}: unsupported ${what}: ${UNSUPPORTED_HINT}`);
}

/** A reference left for Nomad's runtime: it renders as its own source. */
class Deferred {
  constructor(readonly source: string) {}
}

type Evaluated = HclValue | Deferred;

/** Evaluates an hcl2json value (attribute value, list or object of them) in `scope`. */
export function evaluate(raw: unknown, scope: EvalScope | undefined, where: string): HclValue {
  if (typeof raw === "string") return settle(evaluateTemplate(raw, scope, where));
  if (Array.isArray(raw)) return raw.map((v, i) => evaluate(v, scope, `${where}[${i}]`));
  if (raw !== null && typeof raw === "object") {
    const out: Record<string, HclValue> = {};
    for (const [k, v] of Object.entries(raw)) {
      const key = evaluate(k, scope, where);
      if (typeof key !== "string") throw new JobspecError(`${where}: an object key must be a string`);
      out[key] = evaluate(v, scope, `${where}.${key}`);
    }
    return out;
  }
  if (raw === undefined) return null;
  return raw as HclValue;
}

function settle(v: Evaluated): HclValue {
  return v instanceof Deferred ? v.source : v;
}

interface Part {
  readonly text?: string;
  readonly expr?: string;
}

/** A template: literal text and `${...}` parts; a lone `${expr}` keeps its value's type. */
function evaluateTemplate(s: string, scope: EvalScope | undefined, where: string): Evaluated {
  if (!s.includes("${") && !s.includes("%{")) return s;
  const parts = splitTemplate(s, where);
  if (parts.length === 1 && parts[0]!.expr !== undefined) return evaluateExpr(parts[0]!.expr, scope, where);
  let out = "";
  for (const p of parts) {
    if (p.text !== undefined) {
      out += p.text;
      continue;
    }
    const v = evaluateExpr(p.expr!, scope, where);
    if (v instanceof Deferred) out += v.source;
    else out += templateString(v, p.expr!, where);
  }
  return out;
}

function splitTemplate(s: string, where: string): Part[] {
  const parts: Part[] = [];
  let text = "";
  let i = 0;
  while (i < s.length) {
    if (s.startsWith("$${", i)) {
      text += "${";
      i += 3;
    } else if (s.startsWith("%%{", i)) {
      text += "%{";
      i += 3;
    } else if (s.startsWith("${", i)) {
      const end = closingBrace(s, i + 2);
      if (end < 0) throw new JobspecError(`${where}: unterminated template interpolation in "${s}"`);
      if (text !== "") parts.push({ text });
      text = "";
      parts.push({ expr: s.slice(i + 2, end).trim() });
      i = end + 1;
    } else if (s.startsWith("%{", i)) {
      const end = closingBrace(s, i + 2);
      throw unsupported(`template directive "${s.slice(i, end < 0 ? s.length : end + 1)}"`, where);
    } else {
      text += s[i];
      i++;
    }
  }
  if (text !== "") parts.push({ text });
  return parts;
}

/** The index of the `}` closing a `${` whose body starts at `from`; strings inside are skipped. */
function closingBrace(s: string, from: number): number {
  let depth = 0;
  for (let i = from; i < s.length; i++) {
    const c = s[i];
    if (c === '"') {
      for (i++; i < s.length && s[i] !== '"'; i++) if (s[i] === "\\") i++;
    } else if (c === "{") depth++;
    else if (c === "}") {
      if (depth === 0) return i;
      depth--;
    }
  }
  return -1;
}

const NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
const IDENT = /^[A-Za-z_][A-Za-z0-9_-]*/;

function evaluateExpr(expr: string, scope: EvalScope | undefined, where: string): Evaluated {
  if (NUMBER.test(expr)) return Number(expr);
  if (expr === "true") return true;
  if (expr === "false") return false;
  if (expr === "null") return null;
  if (expr.startsWith('"') && expr.endsWith('"') && closingQuote(expr) === expr.length - 1) {
    return evaluateTemplate(unquote(expr, where), scope, where);
  }
  const steps = traversal(expr);
  if (!steps) throw unsupported(`expression "\${${expr}}"`, where);
  const [root, ...rest] = steps;
  if (root !== "var" && root !== "local") return new Deferred(`\${${expr}}`);
  if (!scope)
    throw new JobspecError(
      `${where}: Variables not allowed; variables may not be used here ("\${${expr}}").`,
    );
  let value: HclValue = root === "var" ? { ...scope.vars } : { ...scope.locals };
  for (const step of rest) value = step_(value, step, expr, where);
  return value;
}

function step_(value: HclValue, step: string | number, expr: string, where: string): HclValue {
  if (typeof step === "number") {
    if (Array.isArray(value)) {
      const v = value[step];
      if (v === undefined) {
        throw new JobspecError(
          `${where}: Invalid index; The given key does not identify an element in this collection value ("\${${expr}}").`,
        );
      }
      return v;
    }
    step = String(step);
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    if (!Object.hasOwn(value, step)) {
      throw new JobspecError(
        `${where}: Unsupported attribute; This object does not have an attribute named "${step}" ("\${${expr}}").`,
      );
    }
    return value[step]!;
  }
  throw new JobspecError(
    `${where}: Unsupported attribute; "\${${expr}}" does not name an attribute of a ${kind(value)}.`,
  );
}

/** `root.a["b"][0].c` into its steps, or undefined when it is not a plain traversal. */
function traversal(expr: string): (string | number)[] | undefined {
  const head = IDENT.exec(expr);
  if (!head) return undefined;
  const steps: (string | number)[] = [head[0]];
  let i = head[0].length;
  while (i < expr.length) {
    if (expr[i] === ".") {
      const rest = expr.slice(i + 1);
      const name = IDENT.exec(rest) ?? /^[0-9]+/.exec(rest);
      if (!name) return undefined;
      steps.push(/^[0-9]+$/.test(name[0]) ? Number(name[0]) : name[0]);
      i += 1 + name[0].length;
    } else if (expr[i] === "[") {
      const close = expr.indexOf("]", i);
      if (close < 0) return undefined;
      const key = expr.slice(i + 1, close).trim();
      if (/^[0-9]+$/.test(key)) steps.push(Number(key));
      else if (key.startsWith('"') && closingQuote(key) === key.length - 1 && !key.includes("${")) {
        steps.push(JSON.parse(key) as string);
      } else return undefined;
      i = close + 1;
    } else return undefined;
  }
  return steps;
}

function closingQuote(s: string): number {
  for (let i = 1; i < s.length; i++) {
    if (s[i] === "\\") i++;
    else if (s[i] === '"') return i;
  }
  return -1;
}

/** An HCL quoted string's content, with its escapes. */
function unquote(quoted: string, where: string): string {
  try {
    return JSON.parse(
      quoted.replace(/\\U([0-9a-fA-F]{8})/g, (_, h: string) => String.fromCodePoint(parseInt(h, 16))),
    ) as string;
  } catch {
    throw new JobspecError(`${where}: invalid string ${quoted}`);
  }
}

/** cty's conversion of a value to a string inside a template. */
export function templateString(v: HclValue, expr: string, where: string): string {
  if (v === null) {
    throw new JobspecError(
      `${where}: Invalid template interpolation value; The expression result is null ("\${${expr}}").`,
    );
  }
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  throw new JobspecError(
    `${where}: Invalid template interpolation value; Cannot include the given value in a string template: string required ("\${${expr}}").`,
  );
}

function kind(v: HclValue): string {
  if (v === null) return "null value";
  if (Array.isArray(v)) return "list";
  return typeof v;
}
