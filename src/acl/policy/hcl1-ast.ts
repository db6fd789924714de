/**
 * The tree Nomad's policy decoder walks: HashiCorp HCL v1's AST
 * (github.com/hashicorp/hcl/hcl/ast), reduced to what a policy needs. Nomad
 * v1.6.1 parses ACL rules with HCL v1 (`hcl.Decode`), whose decoder has
 * quirks a policy can hit: keys matched case-insensitively, labels as nested
 * keys, a JSON form "flattened" into multi-key items. Both front ends
 * (policy-json.ts for JSON text, hcl2-tree.ts for HCL text) build this tree,
 * so one decoder (policy-decode.ts) gives both Nomad's results.
 */

/** A source position; line 0 is unknown and prints as `-`, as HCL's token.Pos does. */
export interface Pos {
  readonly line: number;
  readonly column: number;
}

export const NO_POS: Pos = { line: 0, column: 0 };

export const posString = (pos: Pos): string => (pos.line > 0 ? `${pos.line}:${pos.column}` : "-");

/**
 * A key of an item: its decoded value, or the panic Go's unquoting raises
 * when the value is first used (a JSON string Go's strconv.Unquote refuses).
 */
export interface ObjectKey {
  readonly value: string;
  readonly unquoteError?: string;
}

export type LiteralKind = "STRING" | "NUMBER" | "FLOAT" | "BOOL" | "HEREDOC";

export interface Literal {
  readonly type: "literal";
  readonly kind: LiteralKind;
  /** The token text: what a number or a bool decodes to as a string. */
  readonly text: string;
  /** A string's value, unquoted. */
  readonly value: string;
  readonly unquoteError?: string;
  readonly pos: Pos;
}

export interface ListNode {
  readonly type: "list";
  readonly elems: Hcl1Node[];
  readonly pos: Pos;
}

export interface ObjectNode {
  readonly type: "object";
  readonly list: ObjectList;
  readonly pos: Pos;
}

export interface ObjectItem {
  readonly type: "item";
  readonly keys: readonly ObjectKey[];
  readonly val: Hcl1Node | null;
}

export interface ObjectList {
  readonly type: "items";
  items: ObjectItem[];
}

export type Hcl1Node = Literal | ListNode | ObjectNode | ObjectItem | ObjectList;

/** Go's `%T` of the node, for HCL's error texts. */
export function goTypeName(node: Hcl1Node): string {
  switch (node.type) {
    case "literal":
      return "*ast.LiteralType";
    case "list":
      return "*ast.ListType";
    case "object":
      return "*ast.ObjectType";
    case "item":
      return "*ast.ObjectItem";
    case "items":
      return "*ast.ObjectList";
  }
}

/** HCL's Node.Pos(): an object list is where its first item is. */
export function nodePos(node: Hcl1Node): Pos {
  switch (node.type) {
    case "literal":
    case "list":
    case "object":
      return node.pos;
    case "item":
      // An item is where its first key is; keys carry no position here (Nomad's JSON keys have none either).
      return NO_POS;
    case "items":
      return node.items.length > 0 ? nodePos(node.items[0]!) : NO_POS;
  }
}

export const objectList = (items: ObjectItem[]): ObjectList => ({ type: "items", items });
export const item = (keys: readonly ObjectKey[], val: Hcl1Node | null): ObjectItem => ({
  type: "item",
  keys,
  val,
});
export const key = (value: string): ObjectKey => ({ value });

/** A Go runtime panic inside the decoder; Nomad recovers it as "invalid acl policy: <panic>". */
export class GoPanic extends Error {
  constructor(message: string) {
    super(message);
    this.name = "GoPanic";
  }
}

export const indexPanic = (index: number, length: number) =>
  new GoPanic(`runtime error: index out of range [${index}] with length ${length}`);

export const nilPanic = () => new GoPanic("runtime error: invalid memory address or nil pointer dereference");

/** HCL's parser.PosError: `At <pos>: <message>`. */
export class Hcl1PosError extends Error {
  constructor(pos: Pos, message: string) {
    super(`At ${posString(pos)}: ${message}`);
    this.name = "Hcl1PosError";
  }
}

/** Key.Token.Value(), which panics on a string Go cannot unquote. */
export function keyValue(k: ObjectKey): string {
  if (k.unquoteError !== undefined) throw new GoPanic(k.unquoteError);
  return k.value;
}

/**
 * Go's strings.EqualFold, by code point: equal under simple case folding.
 * (Lower- and upper-casing each code point on its own covers what folding
 * does for the ASCII field names it is asked about, the Kelvin sign and the
 * long s included.)
 */
export function equalFold(a: string, b: string): boolean {
  if (a === b) return true;
  if (!NON_ASCII.test(a) && !NON_ASCII.test(b))
    return a.length === b.length && a.toLowerCase() === b.toLowerCase();
  const ca = Array.from(a);
  const cb = Array.from(b);
  if (ca.length !== cb.length) return false;
  for (let i = 0; i < ca.length; i++) {
    const x = ca[i]!;
    const y = cb[i]!;
    if (x === y) continue;
    const xl = x.toLowerCase();
    const yl = y.toLowerCase();
    if (xl.length === 1 && xl === yl) continue;
    const xu = x.toUpperCase();
    const yu = y.toUpperCase();
    if (xu.length === 1 && xu === yu) continue;
    return false;
  }
  return true;
}

const NON_ASCII = /[^\p{ASCII}]/u;

/** ObjectList.Filter(name): items whose first key folds to `name`, that key stripped (shallow copies). */
export function filterItems(list: ObjectList, name: string): ObjectItem[] {
  const out: ObjectItem[] = [];
  for (const it of list.items) {
    if (it.keys.length < 1) continue;
    if (!equalFold(keyValue(it.keys[0]!), name)) continue;
    out.push(item(it.keys.slice(1), it.val));
  }
  return out;
}
