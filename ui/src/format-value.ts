/**
 * How a transition's From/To reads in one line: the shapes the history
 * projection writes (projections/history.ts) each get their own words, any
 * other value its compact JSON.
 */
const MAX_TEXT = 240;

type Rec = Readonly<Record<string, unknown>>;

/** Nomad's AllocStateField enum (streams/allocs.ts): the API gives the number. */
const ALLOC_STATE_FIELDS: Readonly<Record<number, string>> = { 0: "ClientStatus" };

const allocStateField = (field: unknown) =>
  typeof field === "number" ? (ALLOC_STATE_FIELDS[field] ?? `field ${field}`) : String(field);

const isRecord = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v);

export function formatValue(field: string, value: unknown): string {
  if (value === null || value === undefined || value === "") return "—";
  if (isRecord(value)) {
    // An AllocState: a disconnect or reconnect, as "ClientStatus: unknown".
    if (field === "AllocStates" && "Field" in value)
      return `${allocStateField(value.Field)}: ${String(value.Value)}`;
    if (field === "TaskEvents" && "Type" in value) {
      if ("Omitted" in value) return `${String(value.Omitted)} older task events omitted`;
      const text = value.DisplayMessage ?? value.Message ?? "";
      return `${String(value.Task)}: ${String(value.Type)}${text === "" ? "" : ` — ${String(text)}`}`;
    }
    if (field === "TaskEvents" && "Omitted" in value) return `${String(value.Omitted)} task events omitted`;
    if (field === "Events" && "Message" in value)
      return `${String(value.Subsystem ?? "")}: ${String(value.Message)}`;
    if (field === "(created)") return fieldList(value);
    return clip(JSON.stringify(value));
  }
  if (Array.isArray(value)) return clip(value.map((v) => formatValue(field, v)).join(", "));
  return clip(String(value));
}

/** A new object's first values: `Field=value` pairs. */
function fieldList(values: Rec): string {
  const parts = Object.entries(values).map(([k, v]) => `${k}=${formatValue(k, v)}`);
  return clip(parts.length === 0 ? "(no tracked values)" : parts.join(", "));
}

function clip(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text;
}
