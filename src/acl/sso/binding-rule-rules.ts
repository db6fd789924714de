import { formatErrors } from "../../jobs/multierror.ts";
import { compileFilter, FilterError } from "../../query/filter/index.ts";

export const BIND_TYPES: readonly string[] = ["role", "policy", "management"];
/** Nomad's maxACLBindingRuleDescriptionLength. */
export const MAX_BINDING_RULE_DESCRIPTION = 256;

/** Strings where the spec has unions: the handler checks what a caller sent. */
interface Checked {
  readonly AuthMethod: string;
  readonly Description: string;
  readonly BindType: string;
  readonly BindName: string;
  readonly Selector: string;
}

/**
 * Nomad's ACLBindingRule.Validate, its messages in its order. The selector
 * is parsed (go-bexpr's language, src/query/filter) only when
 * `checkSelector`: the handler does, apply does not, so a log written under
 * one parser replays the same under a stricter one.
 */
export function bindingRuleErrors(rule: Checked, checkSelector: boolean): string[] {
  const errors: string[] = [];
  if (rule.AuthMethod === "") errors.push("auth method is missing");
  if (rule.Description.length > MAX_BINDING_RULE_DESCRIPTION) {
    errors.push(`description longer than ${MAX_BINDING_RULE_DESCRIPTION}`);
  }
  switch (rule.BindType) {
    case "":
      errors.push("bind type is missing");
      break;
    case "role":
    case "policy":
      if (rule.BindName === "") errors.push("bind name is missing");
      break;
    case "management":
      if (rule.BindName !== "") errors.push("bind name should be empty");
      break;
    default:
      errors.push(`unsupported bind type: ${JSON.stringify(rule.BindType)}`);
  }
  if (checkSelector && rule.Selector !== "") {
    const problem = selectorProblem(rule.Selector);
    if (problem) errors.push(`selector is invalid: ${problem}`);
  }
  return errors;
}

/** What is wrong with a selector (bexpr's own words), or undefined when it compiles. */
export function selectorProblem(selector: string): string | undefined {
  try {
    compileFilter(selector);
    return undefined;
  } catch (err) {
    if (err instanceof FilterError) return err.detail;
    throw err;
  }
}

/** Nomad's UpsertBindingRules wording for the `index`th rule of a request. */
export function bindingRuleInvalid(index: number, errors: readonly string[]): string {
  return `binding rule ${index} invalid: ${formatErrors(errors)}`;
}
