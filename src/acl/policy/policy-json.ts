import {
  GoPanic,
  type Hcl1Node,
  item,
  type ListNode,
  type Literal,
  type LiteralKind,
  NO_POS,
  type ObjectItem,
  type ObjectKey,
  type ObjectList,
  type ObjectNode,
  objectList,
  type Pos,
} from "./hcl1-ast.ts";

/**
 * ACL rules in JSON, read as Nomad v1.6.1 reads them: HCL v1's JSON parser
 * (github.com/hashicorp/hcl/json), which is far more lenient than JSON.
 * Nomad's own tests rely on it: trailing commas, a missing closing brace,
 * a `]` where a `}` belongs are all accepted, `true` and nested `[...]`
 * inside a list are skipped, anything after the root object is ignored. The
 * tree is then "flattened" as HCL does it (an object whose members are all
 * objects becomes items with several keys; a list of objects becomes one item
 * per element), which is what lets `{"namespace": {"x": {...}}}` and
 * `{"namespace": [{"x": {...}}]}` both read as `namespace "x" {...}`.
 *
 * Positions: literals, lists and objects lose theirs on the way into HCL's
 * tree (its JSON tokens convert without one), so decode errors print `At -:`
 * as Nomad's do; scanner errors keep line and column.
 */

/** A JSON syntax error in HCL v1's words. */
export class PolicyJsonSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PolicyJsonSyntaxError";
  }
}

/** HCL v1 reads a text as JSON when its first non-space character is `{` (hcl.lexMode). */
export function isJsonRules(text: string): boolean {
  for (const ch of text) {
    if (isGoSpace(ch.codePointAt(0)!)) continue;
    return ch === "{";
  }
  return false;
}

/** Go's unicode.IsSpace. */
function isGoSpace(c: number): boolean {
  if (c <= 0xff) return c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0x85 || c === 0xa0;
  return (
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

type Tok =
  | "ILLEGAL"
  | "EOF"
  | "NUMBER"
  | "FLOAT"
  | "BOOL"
  | "STRING"
  | "NULL"
  | "LBRACK"
  | "LBRACE"
  | "COMMA"
  | "PERIOD"
  | "COLON"
  | "RBRACK"
  | "RBRACE";

interface Token {
  readonly type: Tok;
  readonly pos: Pos;
  readonly text: string;
}

/** Go's rune(0): the scanner's end marker, which a NUL character in the text also reads as. */
const EOF = 0;

/**
 * HCL v1's JSON scanner (json/scanner), keeping its line and column
 * bookkeeping (columns count code points). It walks the string by index
 * without allocating per character: rules can be large.
 */
class Scanner {
  private i = 0;
  private line = 1;
  private column = 0;
  /** Code units of the last character read (0 at the end). */
  private lastCharLen = 0;
  private lastLineLen = 0;
  private prevI = 0;
  private prevLine = 1;
  private prevColumn = 0;
  /** Whether the last buffer operation was a read that an unread may undo (Go's bytes.Buffer rule). */
  private canUnread = false;
  /** The last error, as Parse reports it (`line:col: message`). */
  error: string | undefined;

  constructor(private readonly text: string) {}

  private next(): number {
    if (this.i >= this.text.length) {
      this.column++;
      this.lastCharLen = 0;
      this.canUnread = false;
      return EOF;
    }
    this.canUnread = true;
    const ch = this.text.codePointAt(this.i)!;
    this.prevI = this.i;
    this.prevLine = this.line;
    this.prevColumn = this.column;
    const width = ch > 0xffff ? 2 : 1;
    this.i += width;
    this.column++;
    this.lastCharLen = width;
    if (ch === 0x0a) {
      this.line++;
      this.lastLineLen = this.column;
      this.column = 0;
    }
    return ch;
  }

  private unread(): void {
    // Go's scanner unreads after hitting the end in a few places; bytes.Buffer then panics.
    if (!this.canUnread)
      throw new GoPanic("bytes.Buffer: UnreadRune: previous operation was not a successful ReadRune");
    this.canUnread = false;
    this.i = this.prevI;
    this.line = this.prevLine;
    this.column = this.prevColumn;
  }

  private peek(): number {
    this.canUnread = false;
    return this.i < this.text.length ? this.text.codePointAt(this.i)! : EOF;
  }

  private err(msg: string): void {
    let line: number;
    let column: number;
    if (this.column > 0) {
      line = this.line;
      column = this.column;
    } else if (this.lastLineLen > 0) {
      line = this.line - 1;
      column = this.lastLineLen;
    } else {
      line = 1;
      column = 1;
    }
    this.error = `${line}:${column}: ${msg}`;
  }

  scan(): Token {
    let ch = this.next();
    while (ch === 0x20 || ch === 0x09 || ch === 0x0a || ch === 0x0d) ch = this.next();
    const start = this.i - this.lastCharLen;
    const pos: Pos =
      this.column > 0
        ? { line: this.line, column: this.column }
        : { line: this.line - 1, column: this.lastLineLen };
    let type: Tok = "ILLEGAL";
    if (isLetter(ch)) {
      const lit = this.scanIdentifier(start);
      if (lit === "true" || lit === "false") type = "BOOL";
      else if (lit === "null") type = "NULL";
      else this.err("illegal char");
    } else if (isDecimal(ch)) {
      type = this.scanNumber(ch);
    } else {
      switch (ch) {
        case EOF:
          type = "EOF";
          break;
        case 0x22:
          type = "STRING";
          this.scanString();
          break;
        case 0x2e:
          type = "PERIOD";
          if (isDecimal(this.peek())) {
            type = "FLOAT";
            this.scanExponent(this.scanMantissa(this.peek()));
          }
          break;
        case 0x5b:
          type = "LBRACK";
          break;
        case 0x5d:
          type = "RBRACK";
          break;
        case 0x7b:
          type = "LBRACE";
          break;
        case 0x7d:
          type = "RBRACE";
          break;
        case 0x2c:
          type = "COMMA";
          break;
        case 0x3a:
          type = "COLON";
          break;
        case 0x2d:
          if (isDecimal(this.peek())) type = this.scanNumber(this.next());
          else this.err("illegal char");
          break;
        default:
          this.err(`illegal char: ${String.fromCodePoint(ch)}`);
      }
    }
    return { type, pos, text: this.text.slice(start, Math.max(start, this.i)) };
  }

  private scanIdentifier(start: number): string {
    let ch = this.next();
    while (isLetter(ch) || isDigit(ch) || ch === 0x2d) ch = this.next();
    if (ch !== EOF) this.unread();
    return this.text.slice(start, this.i);
  }

  private scanNumber(first: number): Tok {
    const zero = first === 0x30;
    const beforeI = this.i;
    const beforeLine = this.line;
    const beforeColumn = this.column;
    this.scanMantissa(first);
    let ch = this.next();
    if (ch === 0x65 || ch === 0x45) {
      this.scanExponent(ch);
      return "FLOAT";
    }
    if (ch === 0x2e) {
      ch = this.scanFraction(ch);
      if (ch === 0x65 || ch === 0x45) this.scanExponent(this.next());
      return "FLOAT";
    }
    if (ch !== EOF) this.unread();
    if (zero && (beforeI !== this.i || beforeColumn !== this.column || beforeLine !== this.line)) {
      this.err("numbers cannot start with 0");
    }
    return "NUMBER";
  }

  private scanMantissa(first: number): number {
    let ch = first;
    let scanned = false;
    while (isDecimal(ch)) {
      ch = this.next();
      scanned = true;
    }
    if (scanned && ch !== EOF) this.unread();
    return ch;
  }

  private scanFraction(first: number): number {
    return first === 0x2e ? this.scanMantissa(this.peek()) : first;
  }

  private scanExponent(first: number): number {
    let ch = first;
    if (ch === 0x65 || ch === 0x45) {
      ch = this.next();
      if (ch === 0x2d || ch === 0x2b) ch = this.next();
      ch = this.scanMantissa(ch);
    }
    return ch;
  }

  private scanString(): void {
    let braces = 0;
    for (;;) {
      const ch = this.next();
      if (ch === 0x0a || ch === EOF) {
        this.err("literal not terminated");
        return;
      }
      if (ch === 0x22) return;
      if (braces === 0 && ch === 0x24 && this.peek() === 0x7b) {
        braces++;
        this.next();
      } else if (braces > 0 && ch === 0x7b) braces++;
      if (braces > 0 && ch === 0x7d) braces--;
      if (ch === 0x5c) this.scanEscape();
    }
  }

  private scanEscape(): void {
    const ch = this.next();
    switch (ch) {
      case 0x61: // a b f n r t v \ "
      case 0x62:
      case 0x66:
      case 0x6e:
      case 0x72:
      case 0x74:
      case 0x76:
      case 0x5c:
      case 0x22:
        return;
      case 0x78:
        this.scanDigits(this.next(), 16, 2);
        return;
      case 0x75:
        this.scanDigits(this.next(), 16, 4);
        return;
      case 0x55:
        this.scanDigits(this.next(), 16, 8);
        return;
      default:
        if (ch >= 0x30 && ch <= 0x37) this.scanDigits(ch, 8, 3);
        else this.err("illegal char escape");
    }
  }

  private scanDigits(first: number, base: number, count: number): void {
    let ch = first;
    let n = count;
    while (n > 0 && digitVal(ch) < base) {
      ch = this.next();
      n--;
    }
    if (n > 0) this.err("illegal char escape");
    this.unread();
  }
}

function isLetter(c: number): boolean {
  return (
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x41 && c <= 0x5a) ||
    c === 0x5f ||
    (c >= 0x80 && /\p{L}/u.test(String.fromCodePoint(c)))
  );
}

function isDigit(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x80 && /\p{Nd}/u.test(String.fromCodePoint(c)));
}

const isDecimal = (c: number) => c >= 0x30 && c <= 0x39;

function digitVal(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return 16;
}

/**
 * Go's strconv.Unquote of a double-quoted token (Go escapes, not JSON's:
 * `\/` is refused by the scanner, a `\u` surrogate by Unquote). Returns the
 * value, or undefined when Go would fail.
 */
export function goUnquote(text: string): string | undefined {
  if (text.length < 2 || text[0] !== '"' || text[text.length - 1] !== '"') return undefined;
  const body = text.slice(1, -1);
  if (!body.includes("\\")) return body.includes('"') || body.includes("\n") ? undefined : body;
  let out = "";
  // Bytes from \x and octal escapes, decoded together: several may make one UTF-8 character.
  let bytes: number[] = [];
  let i = 0;
  while (i < body.length) {
    const c = body[i]!;
    if (c === '"' || c === "\n") return undefined;
    if (c !== "\\") {
      out += flush(bytes) + c;
      bytes = [];
      i++;
      continue;
    }
    const e = body[i + 1];
    if (e === undefined) return undefined;
    i += 2;
    const simple = SIMPLE_ESCAPES[e];
    if (simple !== undefined) {
      out += flush(bytes) + simple;
      bytes = [];
    } else if (e === "x" || e === "u" || e === "U") {
      const n = e === "x" ? 2 : e === "u" ? 4 : 8;
      const hex = body.slice(i, i + n);
      if (hex.length < n || !/^[0-9a-fA-F]+$/.test(hex)) return undefined;
      i += n;
      const v = Number.parseInt(hex, 16);
      if (e === "x") bytes.push(v);
      else {
        if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return undefined;
        out += flush(bytes) + String.fromCodePoint(v);
        bytes = [];
      }
    } else if (e >= "0" && e <= "7") {
      const oct = body.slice(i - 1, i + 2);
      if (!/^[0-7]{3}$/.test(oct)) return undefined;
      const v = Number.parseInt(oct, 8);
      if (v > 255) return undefined;
      i += 2;
      bytes.push(v);
    } else return undefined;
  }
  return out + flush(bytes);
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  a: "\x07",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  "\\": "\\",
  '"': '"',
};

function flush(bytes: readonly number[]): string {
  return bytes.length === 0 ? "" : Buffer.from(bytes).toString("utf8");
}

/** Go's errEofToken: the parser's "nothing more" signal, which ends an object list quietly. */
const EOF_ERROR = new PolicyJsonSyntaxError("EOF token found");

/** Go's `(value, error)` pairs: the parser keeps going on some errors, so they are values here. */
type Result<T> = readonly [T, undefined] | readonly [T | undefined, PolicyJsonSyntaxError];

const ok = <T>(v: T): Result<T> => [v, undefined];
const fail = <T>(err: PolicyJsonSyntaxError, v?: T): Result<T> => [v, err];
const syntax = (msg: string) => new PolicyJsonSyntaxError(msg);

/** HCL v1's JSON parser (json/parser), with its leniencies kept. */
class Parser {
  private tok: Token = { type: "ILLEGAL", pos: NO_POS, text: "" };
  private readonly sc: Scanner;

  constructor(text: string) {
    this.sc = new Scanner(text);
  }

  parse(): ObjectList {
    const [root, err] = this.object();
    // A scanner error wins over the parser's, as in Go (the scanner reports through a callback).
    if (this.sc.error !== undefined) throw new PolicyJsonSyntaxError(this.sc.error);
    if (err) throw err;
    flattenList(root!.list);
    return root!.list;
  }

  private scan(): Token {
    this.tok = this.sc.scan();
    return this.tok;
  }

  private object(): Result<ObjectNode> {
    const tok = this.scan();
    if (tok.type === "LBRACE") return this.objectType();
    if (tok.type === "EOF") return fail(EOF_ERROR);
    return fail(syntax(`Expected object, got unknown token: ${tokenString(tok)}`));
  }

  private objectType(): Result<ObjectNode> {
    const [list, err] = this.objectList();
    // Only a `}` where an item was expected passes: `{}` and trailing commas; a missing `}` is never checked.
    if (err && this.tok.type !== "RBRACE") return fail(err);
    return ok({ type: "object", list, pos: NO_POS });
  }

  private objectList(): readonly [ObjectList, PolicyJsonSyntaxError | undefined] {
    const node = objectList([]);
    for (;;) {
      const [n, err] = this.objectItem();
      if (err === EOF_ERROR) break;
      if (err) return [node, err];
      node.items.push(n!);
      if (this.scan().type !== "COMMA") break;
    }
    return [node, undefined];
  }

  private objectItem(): Result<ObjectItem> {
    const [keys, err] = this.objectKey();
    if (err) return fail(err);
    const [val, verr] = this.objectValue();
    if (verr) return fail(verr);
    return ok(item(keys!, val!));
  }

  private objectKey(): Result<ObjectKey[]> {
    const keys: ObjectKey[] = [];
    for (;;) {
      const tok = this.scan();
      switch (tok.type) {
        case "EOF":
          return fail(EOF_ERROR);
        case "STRING":
          keys.push(jsonKey(tok.text));
          break;
        case "COLON":
          if (keys.length === 0) return fail(syntax(`expected: STRING got: ${tok.type}`));
          return ok(keys);
        case "ILLEGAL":
          return fail(syntax("illegal"));
        default:
          return fail(syntax(`expected: STRING got: ${tok.type}`));
      }
    }
  }

  private objectValue(): Result<Hcl1Node> {
    const tok = this.scan();
    switch (tok.type) {
      case "NUMBER":
      case "FLOAT":
      case "BOOL":
      case "NULL":
      case "STRING":
        return ok(literal(tok));
      case "LBRACE":
        return this.objectType();
      case "LBRACK":
        return this.listType();
      case "EOF":
        return fail(EOF_ERROR);
      default:
        return fail(syntax(`Expected object value, got unknown token: ${tokenString(tok)}`));
    }
  }

  private listType(): Result<ListNode> {
    const elems: Hcl1Node[] = [];
    for (;;) {
      const tok = this.scan();
      switch (tok.type) {
        case "NUMBER":
        case "FLOAT":
        case "STRING":
          elems.push(literal(tok));
          break;
        case "COMMA":
        case "BOOL": // HCL v1 skips these inside a list
        case "LBRACK":
          break;
        case "LBRACE": {
          const [obj, err] = this.objectType();
          if (err) return fail(err);
          elems.push(obj!);
          break;
        }
        case "RBRACK":
          return ok({ type: "list", elems, pos: NO_POS });
        default:
          return fail(syntax(`unexpected token while parsing list: ${tok.type}`));
      }
    }
  }
}

/** Go's `%+v` of a JSON token: its String() method, `<pos> <type> <text>`. */
function tokenString(tok: Token): string {
  return `${tok.pos.line > 0 ? `${tok.pos.line}:${tok.pos.column}` : "-"} ${tok.type} ${tok.text}`;
}

function jsonKey(text: string): ObjectKey {
  const value = goUnquote(text);
  return value === undefined ? { value: "", unquoteError: `unquote ${text} err: invalid syntax` } : { value };
}

/** A JSON token as HCL's literal: null becomes the empty string, strings are unquoted when used. */
const LITERAL_KINDS: Partial<Record<Tok, LiteralKind>> = { NUMBER: "NUMBER", FLOAT: "FLOAT", BOOL: "BOOL" };

function literal(tok: Token): Literal {
  const kind = LITERAL_KINDS[tok.type];
  if (kind) return { type: "literal", kind, text: tok.text, value: tok.text, pos: NO_POS };
  if (tok.type === "NULL") return { type: "literal", kind: "STRING", text: "", value: "", pos: NO_POS };
  const value = goUnquote(tok.text);
  return value === undefined
    ? {
        type: "literal",
        kind: "STRING",
        text: tok.text,
        value: "",
        unquoteError: `unquote ${tok.text} err: invalid syntax`,
        pos: NO_POS,
      }
    : { type: "literal", kind: "STRING", text: tok.text, value, pos: NO_POS };
}

/** HCL's flattenObjects over every object list of the tree. */
function flattenList(list: ObjectList): void {
  list.items = list.items.flatMap(flattenItem);
  for (const it of list.items) if (it.val) flattenNode(it.val);
}

function flattenNode(node: Hcl1Node): void {
  if (node.type === "object") flattenList(node.list);
  else if (node.type === "list") for (const e of node.elems) flattenNode(e);
}

function flattenItem(it: ObjectItem): ObjectItem[] {
  const v = it.val;
  if (v?.type === "object") {
    const subs = v.list.items;
    if (subs.length === 0 || !subs.every((s) => s.val?.type === "object")) return [it];
    return subs.flatMap((s) => flattenItem(item([...it.keys, ...s.keys], s.val)));
  }
  if (v?.type === "list") {
    if (v.elems.length === 0 || !v.elems.every((e) => e.type === "object")) return [it];
    return v.elems.flatMap((e) => flattenItem(item(it.keys, e)));
  }
  return [it];
}

/** The root object list of JSON rules, flattened; throws PolicyJsonSyntaxError. */
export function parseJsonRules(text: string): ObjectList {
  return new Parser(text).parse();
}
