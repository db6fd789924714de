import { blockOrder, pathKey } from "../../jobs/hcl/hcl-block-order.ts";
import {
  equalFold,
  type Hcl1Node,
  item,
  key,
  NO_POS,
  type ObjectItem,
  type ObjectList,
  objectList,
} from "./hcl1-ast.ts";

/**
 * HCL rules, as HashiCorp's HCL2 parser renders them to JSON (hcl2json),
 * turned into the HCL v1 tree Nomad's decoder walks: a block becomes an item
 * whose keys are its type and its labels, its body an object; an attribute an
 * item with one key. hcl2json groups the blocks of one type by label and
 * sorts the labels, so the blocks are put back in the order they were
 * written (blockOrder scans the text for their headers); blocks of one type
 * and label stay together in their written order.
 *
 * hcl2json writes blocks and attributes alike as JSON, so the shape decides:
 * a list of objects is a run of unlabeled blocks, an object whose every leaf
 * is such a list holds labeled blocks, anything else is an attribute; the
 * policy's own attributes (`policy`, `capabilities`) are always attributes.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (v: Json | undefined): v is JsonObject =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A list of block bodies: hcl2json's rendering of one or more blocks of a type. */
const isBodies = (v: Json): v is JsonObject[] => Array.isArray(v) && v.length > 0 && v.every(isObject);

/** An object that holds labeled blocks only, down to its leaves. */
function isLabeled(v: Json): v is JsonObject {
  if (!isObject(v)) return false;
  const values = Object.values(v);
  return values.length > 0 && values.every((x) => isBodies(x) || isLabeled(x));
}

export function hcl2Tree(json: unknown, text: string): ObjectList {
  const order = blockOrder(text);
  if (!isObject(json as Json)) return objectList([]);
  return body(json as JsonObject, [], order);
}

const ATTRIBUTES = ["policy", "capabilities"];

interface Placed {
  readonly item: ObjectItem;
  /** Where the block's header starts in the text, when it is a labeled block. */
  readonly at: number | undefined;
}

function body(obj: JsonObject, path: readonly string[], order: ReadonlyMap<string, number>): ObjectList {
  const placed: Placed[] = [];
  for (const [name, value] of Object.entries(obj)) {
    if (ATTRIBUTES.some((a) => equalFold(a, name))) {
      placed.push({ item: item([key(name)], attribute(value)), at: undefined });
    } else if (isBodies(value)) {
      value.forEach((b, k) => {
        const child = [...path, `${name}#${k}`];
        placed.push({ item: item([key(name)], object(body(b, child, order))), at: undefined });
      });
    } else if (isLabeled(value)) {
      labeled(name, [], value, path, order, placed);
    } else {
      placed.push({ item: item([key(name)], attribute(value)), at: undefined });
    }
  }
  return objectList(inWrittenOrder(placed));
}

function labeled(
  name: string,
  labels: readonly string[],
  value: JsonObject,
  path: readonly string[],
  order: ReadonlyMap<string, number>,
  out: Placed[],
): void {
  for (const [label, v] of Object.entries(value)) {
    const ls = [...labels, label];
    if (isBodies(v)) {
      const child = [...path, name, ...ls];
      const at = order.get(pathKey(child));
      for (const b of v) {
        out.push({ item: item([key(name), ...ls.map(key)], object(body(b, child, order))), at });
      }
    } else if (isObject(v)) {
      labeled(name, ls, v, path, order, out);
    }
  }
}

/** The labeled blocks sorted by where they were written, each keeping a slot a labeled block held. */
function inWrittenOrder(placed: readonly Placed[]): ObjectItem[] {
  const slots: number[] = [];
  const blocks: Placed[] = [];
  placed.forEach((p, i) => {
    if (p.at !== undefined) {
      slots.push(i);
      blocks.push(p);
    }
  });
  const sorted = [...blocks].sort((a, b) => a.at! - b.at!);
  const items = placed.map((p) => p.item);
  slots.forEach((slot, i) => {
    items[slot] = sorted[i]!.item;
  });
  return items;
}

const object = (list: ObjectList): Hcl1Node => ({ type: "object", list, pos: NO_POS });

/** An attribute's value as HCL v1 would hold it; HCL2's null reads as the empty string, as JSON null does in v1. */
function attribute(v: Json): Hcl1Node {
  if (v === null) return { type: "literal", kind: "STRING", text: "", value: "", pos: NO_POS };
  if (typeof v === "string") return { type: "literal", kind: "STRING", text: v, value: v, pos: NO_POS };
  if (typeof v === "boolean") {
    const text = String(v);
    return { type: "literal", kind: "BOOL", text, value: text, pos: NO_POS };
  }
  if (typeof v === "number") {
    const text = String(v);
    return {
      type: "literal",
      kind: Number.isInteger(v) ? "NUMBER" : "FLOAT",
      text,
      value: text,
      pos: NO_POS,
    };
  }
  if (Array.isArray(v)) return { type: "list", elems: v.map(attribute), pos: NO_POS };
  return object(objectList(Object.entries(v).map(([k, x]) => item([key(k)], attribute(x)))));
}
