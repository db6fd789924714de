/**
 * A binding rule's BindName template, e.g. `eng-${value.team}`: Nomad
 * evaluates it with HashiCorp's HIL over string variables only
 * (`lib/auth/binder.go` interpolateHIL).
 *
 * Only the part of HIL a bind name can use is written here: literal text,
 * `$$` (a literal `$`), and `${ <variable> }`. With nothing but string
 * variables in scope and no functions, what else HIL offers (arithmetic,
 * comparisons, conditionals over string literals) cannot compute a name from
 * claims that a plain variable cannot, and the full language would be a
 * parser and a type checker to maintain for no bind name anyone writes.
 * Such templates are refused with a message that says so.
 */

/** A template that cannot be evaluated; Nomad fails the login with it. */
export class BindNameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BindNameError";
  }
}

/** HIL's identifier characters (its scanner: letters, digits, marks, `_`, `-`, `.`). */
const IDENTIFIER = /^[\p{L}\p{M}\p{N}_.-]+$/u;

/**
 * Evaluates `template`: each `${name}` is replaced by `vars[name]`
 * (lowercased when `lowercase`, as Nomad does for bind names), `$$` becomes
 * `$`. An unknown variable or an unsupported expression throws.
 */
export function interpolateBindName(
  template: string,
  vars: Readonly<Record<string, string>>,
  lowercase: boolean,
): string {
  // Nomad skips the parser when there is nothing to interpolate: `$$` then stays as written.
  if (!template.includes("${")) return template;
  let out = "";
  let i = 0;
  while (i < template.length) {
    const c = template[i];
    if (c === "$" && template[i + 1] === "$") {
      out += "$";
      i += 2;
      continue;
    }
    if (c === "$" && template[i + 1] === "{") {
      const end = template.indexOf("}", i + 2);
      if (end < 0) throw new BindNameError(`unterminated interpolation "${template.slice(i)}"`);
      const name = template.slice(i + 2, end).trim();
      if (!IDENTIFIER.test(name) || name.startsWith("-") || /^[0-9]/.test(name)) {
        throw new BindNameError(
          `unsupported expression "\${${template.slice(i + 2, end)}}": a bind name may only interpolate variables such as \${value.name}`,
        );
      }
      if (!Object.hasOwn(vars, name)) throw new BindNameError(`unknown variable accessed: ${name}`);
      const value = vars[name] as string;
      out += lowercase ? value.toLowerCase() : value;
      i = end + 1;
      continue;
    }
    out += c;
    i += 1;
  }
  return out;
}
