import { formatTime, h, link, shortId } from "../dom.ts";
import { formatValue } from "../format-value.ts";
import { routeHash, timelineHash } from "../router.ts";
import type { Actor, DiffField, DiffObject, HistoryEntry, JobDiff } from "../types.ts";

/** One transition of a timeline: `li[data-testid=transition]` with its from/to/cause/actor parts (the contract's hooks). */
export function transitionItem(entry: HistoryEntry): HTMLLIElement {
  const fresh = entry.From === null && entry.Field !== "(deleted)";
  return h(
    "li",
    { "data-testid": "transition", "data-index": entry.Index, "data-field": entry.Field },
    h(
      "div",
      { class: "when" },
      link(routeHash("cluster", [], { index: String(entry.Index) }), `#${entry.Index}`, {
        title: `The cluster at index ${entry.Index}`,
      }),
      " ",
      h("time", { datetime: entry.Time }, formatTime(entry.Time)),
    ),
    h("div", { class: "field" }, hidden("field: "), h("code", {}, entry.Field)),
    h(
      "div",
      { class: "change" },
      // A new object, or a new entry of a list, has no "from": its element stays, empty.
      h("span", { "data-part": "from" }, fresh ? null : shownValue(entry.Field, entry.From)),
      fresh ? null : [h("span", { "aria-hidden": "true" }, " → "), hidden(" to ")],
      h("span", { "data-part": "to" }, shownValue(entry.Field, entry.To)),
      entry.Diff ? diffDetails(entry.Diff) : null,
    ),
    h(
      "div",
      { class: "cause" },
      hidden("cause: "),
      h("span", { "data-part": "cause" }, causeParts(entry.Cause)),
    ),
    h("div", { class: "actor" }, hidden("by: "), h("span", { "data-part": "actor" }, actorPart(entry.Actor))),
  );
}

/**
 * The record's event and what led to it: the evaluation, node or plan named
 * by its data, the heartbeat expiry (Cause "heartbeat-missed" with its node),
 * and the earlier record it follows from (Type, Index).
 */
function causeParts(cause: Readonly<Record<string, unknown>>): (Node | string)[] {
  const parts: (Node | string)[] = [h("code", {}, String(cause.Event ?? "?"))];
  const str = (k: string) =>
    typeof cause[k] === "string" && cause[k] !== "" ? (cause[k] as string) : undefined;
  const why = str("Cause") ?? str("TriggeredBy") ?? str("Reason");
  if (why) parts.push(" ", h("span", { class: "why" }, why));
  const evalId = str("EvalID");
  if (evalId) parts.push(" ", labelled("eval", link(timelineHash("evaluation", evalId), shortId(evalId))));
  const nodeId = str("NodeID");
  if (nodeId) parts.push(" ", labelled("node", link(timelineHash("node", nodeId), shortId(nodeId))));
  const planId = str("PlanID");
  if (planId) parts.push(" ", labelled("plan", h("span", { title: planId }, shortId(planId))));
  const type = str("Type");
  const index = typeof cause.Index === "number" ? cause.Index : undefined;
  if (type || index !== undefined) {
    parts.push(
      " ",
      h(
        "span",
        { class: "after" },
        "after ",
        type ? h("code", {}, type) : null,
        index === undefined
          ? null
          : [" at ", link(routeHash("cluster", [], { index: String(index) }), `#${index}`)],
      ),
    );
  }
  return parts;
}

/** Fields whose value is the ID of an object with a timeline of its own. */
const ID_FIELDS: Readonly<Record<string, string>> = {
  NodeID: "node",
  NextAllocation: "allocation",
  FollowupEvalID: "evaluation",
  NextEval: "evaluation",
  BlockedEval: "evaluation",
};

function shownValue(field: string, value: unknown): Node | string {
  const kind = ID_FIELDS[field];
  if (kind && typeof value === "string" && value !== "") return link(timelineHash(kind, value), value);
  return formatValue(field, value);
}

/** Words a screen reader needs where sighted readers have the column's position. */
const hidden = (text: string) => h("span", { class: "visually-hidden" }, text);

const labelled = (label: string, value: Node) => h("span", { class: "ref" }, `${label} `, value);

/** Who: a token links to its own timeline, a node to the node's. */
function actorPart(actor: Actor): (Node | string)[] {
  const name = actor.name ? ` (${actor.name})` : "";
  switch (actor.kind) {
    case "token":
      return ["token ", link(timelineHash("token", actor.id), shortId(actor.id)), name];
    case "node":
      return ["node ", link(timelineHash("node", actor.id), shortId(actor.id)), name];
    case "remote":
    case "anonymous":
      return [`${actor.kind} ${actor.addr ?? actor.id}`];
    default:
      return [`${actor.kind} ${actor.id}${name}`];
  }
}

/** A job version's diff, folded: field changes as `Name: old → new`. */
function diffDetails(diff: JobDiff): HTMLDetailsElement {
  const lines: string[] = [];
  const fields = (prefix: string, list: readonly DiffField[] | undefined) => {
    for (const f of list ?? []) lines.push(`${prefix}${f.Name}: ${f.Old || "—"} → ${f.New || "—"}`);
  };
  const objects = (prefix: string, list: readonly DiffObject[] | undefined) => {
    for (const o of list ?? []) {
      fields(`${prefix}${o.Name}.`, o.Fields);
      objects(`${prefix}${o.Name}.`, o.Objects);
    }
  };
  fields("", diff.Fields);
  objects("", diff.Objects);
  for (const g of diff.TaskGroups ?? []) {
    fields(`${g.Name}.`, g.Fields);
    objects(`${g.Name}.`, g.Objects);
    objects(`${g.Name}.`, g.Tasks);
  }
  if (diff.Truncated) lines.push("… (diff truncated)");
  return h(
    "details",
    { class: "diff" },
    h("summary", {}, `What changed (${lines.length})`),
    h(
      "ul",
      {},
      lines.map((l) => h("li", {}, l)),
    ),
  );
}
