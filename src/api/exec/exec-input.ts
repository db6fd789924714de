/**
 * One websocket message of an exec session (drivers.ExecTaskStreamingRequestMsg
 * as Nomad's HTTP agent reads it with encoding/json: `{"stdin": {"data":
 * "<base64>", "close": true}, "tty_size": {"height": 40, "width": 120}}`,
 * keys matched in any case, unknown keys ignored), turned into the struct
 * the client agent decodes from msgpack. `Data` stays base64: the codec
 * writes it as Go's []byte.
 */
export interface ExecInput {
  readonly Stdin: { readonly Data: string | null; readonly Close: boolean } | null;
  readonly TtySize: { readonly Height: number; readonly Width: number } | null;
}

/** A message Go's decoder would refuse, with its reason. */
export class ExecInputError extends Error {}

const STRUCT = "ExecTaskStreamingRequest";
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function parseExecInput(text: string): ExecInput {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ExecInputError((err as Error).message);
  }
  if (value === null) return { Stdin: null, TtySize: null };
  const top = objectOf(value, "", STRUCT);
  const stdinValue = field(top, "stdin");
  const ttyValue = field(top, "tty_size");
  return {
    Stdin: stdinValue === undefined || stdinValue === null ? null : stdin(stdinValue),
    TtySize: ttyValue === undefined || ttyValue === null ? null : ttySize(ttyValue),
  };
}

function stdin(value: unknown): ExecInput["Stdin"] {
  const op = objectOf(value, "stdin", "ExecTaskStreamingIOOperation");
  const data = field(op, "data");
  const close = field(op, "close");
  let encoded: string | null = null;
  if (data !== undefined && data !== null) {
    if (typeof data !== "string") throw mismatch(data, "stdin.data", "[]uint8");
    const clean = data.replace(/[\r\n]/g, "");
    if (!BASE64.test(clean)) throw new ExecInputError("illegal base64 data at input byte 0");
    encoded = clean;
  }
  if (close !== undefined && close !== null && typeof close !== "boolean")
    throw mismatch(close, "stdin.close", "bool");
  return { Data: encoded, Close: close === true };
}

function ttySize(value: unknown): ExecInput["TtySize"] {
  const size = objectOf(value, "tty_size", "ExecTaskStreamingRequest_TerminalSize");
  return {
    Height: int32(field(size, "height"), "tty_size.height"),
    Width: int32(field(size, "width"), "tty_size.width"),
  };
}

function int32(value: unknown, path: string): number {
  if (value === undefined || value === null) return 0;
  if (typeof value !== "number") throw mismatch(value, path, "int32");
  if (!Number.isInteger(value) || value > 2_147_483_647 || value < -2_147_483_648) {
    throw new ExecInputError(
      `json: cannot unmarshal number ${value} into Go struct field ${STRUCT}.${path} of type int32`,
    );
  }
  return value;
}

/** Go matches JSON keys to fields case-insensitively; the exact name wins. */
function field(object: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(object, name)) return object[name];
  for (const [key, value] of Object.entries(object)) if (key.toLowerCase() === name) return value;
  return undefined;
}

function objectOf(value: unknown, path: string, goType: string): Record<string, unknown> {
  if (typeof value === "object" && value !== null && !Array.isArray(value))
    return value as Record<string, unknown>;
  if (path === "")
    throw new ExecInputError(
      `json: cannot unmarshal ${jsonType(value)} into Go value of type drivers.${goType}`,
    );
  throw mismatch(value, path, `proto.${goType}`);
}

function mismatch(value: unknown, path: string, goType: string): ExecInputError {
  return new ExecInputError(
    `json: cannot unmarshal ${jsonType(value)} into Go struct field ${STRUCT}.${path} of type ${goType}`,
  );
}

function jsonType(value: unknown): string {
  if (Array.isArray(value)) return "array";
  if (typeof value === "object") return "object";
  return typeof value;
}
