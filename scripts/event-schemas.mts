/**
 * Writes the JSON Schemas (draft 2020-12) of the log's records from the
 * TypeScript types the code itself uses, so the two cannot drift:
 *
 *   docs/schemas/<Type>.v<version>.json   the data of each event type, at its current version
 *   docs/schemas/envelope.json            the envelope around it (streams/event-schema.ts)
 *   docs/schemas/index.json               every type, its version, schema and upcasters
 *   docs/log-format.md                    the versions table between its marker comments
 *
 *   npm run docs:schemas            rewrite them
 *   npm run docs:schemas -- --check exit 1 if any of them is out of date
 *
 * The types come from streams/*.ts: each stream declares its events as
 * `Envelope<"Type", Data>` (alone or in a union); the type list and versions
 * come from allSchemas (streams/index.ts), and what each upcaster does from
 * the comment above its `upcast` and its code. test/docs/event-schemas.test.ts
 * fails when the committed files differ from what this produces.
 */
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";
import { allSchemas } from "../streams/index.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const STREAMS = join(ROOT, "streams");
const SCHEMAS_DIR = "docs/schemas";
const DOC = "docs/log-format.md";
const DRAFT = "https://json-schema.org/draft/2020-12/schema";
export const TABLE_BEGIN = "<!-- event-versions:begin (npm run docs:schemas writes this table) -->";
export const TABLE_END = "<!-- event-versions:end -->";

// A JSON Schema as built here: plain JSON.
type Schema = { [key: string]: unknown };

export interface GenerateOptions {
  /**
   * Refuse properties an interface does not declare. The committed schemas
   * leave them open: records may gain optional fields without a new version
   * (see AllocsPlanApplied), and an older reader must still accept them. The
   * test validates the golden samples closed, to catch samples and types that
   * disagree.
   */
  readonly closed?: boolean;
}

export interface UpcasterInfo {
  readonly from: number;
  readonly to: number;
  /** The comment above the `upcast` entry, if any. */
  readonly note: string;
  /** The upcaster's source. */
  readonly code: string;
}

export interface EventTypeInfo {
  readonly type: string;
  readonly version: number;
  /** The TypeScript type of its data, and the stream file declaring it. */
  readonly dataType: string;
  readonly stream: string;
  readonly upcasters: readonly UpcasterInfo[];
}

export interface Generated {
  /** Path relative to the repository root -> file contents. */
  readonly files: ReadonlyMap<string, string>;
  readonly events: readonly EventTypeInfo[];
  /** The versions table (Markdown) that goes between the markers of docs/log-format.md. */
  readonly table: string;
  /** Schema of each event type's data, by type. */
  readonly schemas: ReadonlyMap<string, Schema>;
  readonly envelope: Schema;
}

/** Builds every schema file and the versions table in memory. */
export function generateEventSchemas(options: GenerateOptions = {}): Generated {
  const program = ts.createProgram({
    rootNames: ts.sys.readDirectory(STREAMS, [".ts"]),
    options: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      exactOptionalPropertyTypes: false,
      allowImportingTsExtensions: true,
      noEmit: true,
      types: [],
      lib: ["lib.es2023.d.ts"],
    },
  });
  const checker = program.getTypeChecker();
  const streamFiles = program
    .getSourceFiles()
    .filter((f) => resolve(dirname(f.fileName)) === STREAMS && !f.isDeclarationFile);

  const dataTypes = new Map<string, { node: ts.TypeNode; file: ts.SourceFile }>();
  const upcastNodes = new Map<string, ts.ObjectLiteralExpression>();
  const upcastNotes = new Map<string, string>();
  for (const file of streamFiles) collectStream(file, dataTypes, upcastNodes, upcastNotes);

  const converter = new SchemaConverter(checker, options.closed ?? false);
  const files = new Map<string, string>();
  const events: EventTypeInfo[] = [];
  const schemas = new Map<string, Schema>();
  for (const s of [...allSchemas].sort((a, b) => a.type.localeCompare(b.type))) {
    const found = dataTypes.get(s.type);
    if (!found) {
      throw new Error(
        `event type ${s.type} is in allSchemas but no stream declares Envelope<"${s.type}", Data>`,
      );
    }
    const schema = converter.document(checker.getTypeFromTypeNode(found.node), {
      title: `${s.type} v${s.version}`,
      description: `The data of a ${s.type} record (envelope "type": "${s.type}", "v": ${s.version}).`,
    });
    schemas.set(s.type, schema);
    files.set(`${SCHEMAS_DIR}/${s.type}.v${s.version}.json`, json(schema));
    events.push({
      type: s.type,
      version: s.version,
      dataType: found.node.getText(found.file),
      stream: relative(ROOT, found.file.fileName),
      upcasters: upcasters(s.type, s.version, upcastNodes.get(s.type), upcastNotes.get(s.type) ?? ""),
    });
  }
  for (const type of dataTypes.keys()) {
    if (!allSchemas.some((s) => s.type === type))
      throw new Error(`a stream declares Envelope<"${type}", ...> but allSchemas does not list ${type}`);
  }

  const envelope = envelopeSchema(converter, checker, streamFiles);
  files.set(`${SCHEMAS_DIR}/envelope.json`, json(envelope));
  files.set(`${SCHEMAS_DIR}/index.json`, json(indexOf(events)));
  return { files, events, table: versionsTable(events), schemas, envelope };
}

/** Finds `Envelope<"Type", Data>` type references and the `upcast` entries of `schemas(...)` calls. */
function collectStream(
  file: ts.SourceFile,
  dataTypes: Map<string, { node: ts.TypeNode; file: ts.SourceFile }>,
  upcastNodes: Map<string, ts.ObjectLiteralExpression>,
  upcastNotes: Map<string, string>,
): void {
  const visit = (node: ts.Node): void => {
    if (
      ts.isTypeReferenceNode(node) &&
      ts.isIdentifier(node.typeName) &&
      node.typeName.text === "Envelope" &&
      node.typeArguments?.length === 2
    ) {
      const [name, data] = node.typeArguments;
      if (name && data && ts.isLiteralTypeNode(name) && ts.isStringLiteral(name.literal)) {
        const type = name.literal.text;
        const seen = dataTypes.get(type);
        if (seen && seen.node.getText(seen.file) !== data.getText(file))
          throw new Error(`event type ${type} is declared with two data types`);
        dataTypes.set(type, { node: data, file });
      }
    }
    if (ts.isObjectLiteralExpression(node)) {
      const typeProp = propertyNamed(node, "type");
      const upcast = propertyNamed(node, "upcast");
      if (
        typeProp &&
        upcast &&
        ts.isStringLiteral(typeProp.initializer) &&
        ts.isObjectLiteralExpression(upcast.initializer)
      ) {
        upcastNodes.set(typeProp.initializer.text, upcast.initializer);
        upcastNotes.set(typeProp.initializer.text, leadingComment(file, upcast));
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
}

function propertyNamed(obj: ts.ObjectLiteralExpression, name: string): ts.PropertyAssignment | undefined {
  for (const p of obj.properties) {
    if (ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) && p.name.text === name) return p;
  }
  return undefined;
}

/** The `//` or `/* *\/` comments right above a node, as one line of text. */
function leadingComment(file: ts.SourceFile, node: ts.Node): string {
  const text = file.getFullText();
  const ranges = ts.getLeadingCommentRanges(text, node.getFullStart()) ?? [];
  return ranges
    .map((r) =>
      text
        .slice(r.pos, r.end)
        .replace(/^\/\/\s?/gm, "")
        .replace(/^\/\*+\s?|\s*\*+\/$/g, "")
        .replace(/^\s*\*\s?/gm, ""),
    )
    .join(" ")
    .replace(/\s+/g, " ")
    .trim();
}

function upcasters(
  type: string,
  version: number,
  node: ts.ObjectLiteralExpression | undefined,
  note: string,
): UpcasterInfo[] {
  const out: UpcasterInfo[] = [];
  for (let from = 1; from < version; from++) {
    const entry = node?.properties.find(
      (p): p is ts.PropertyAssignment =>
        ts.isPropertyAssignment(p) &&
        (ts.isNumericLiteral(p.name) || ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) &&
        p.name.text === String(from),
    );
    if (!entry) throw new Error(`${type}: no upcaster from v${from} found in its stream's schemas(...)`);
    const file = entry.getSourceFile();
    const own = leadingComment(file, entry);
    out.push({
      from,
      to: from + 1,
      note: own || note,
      code: entry.initializer.getText(file).replace(/\s+/g, " "),
    });
  }
  return out;
}

/** Turns checker types into JSON Schema; named stream types become $defs. */
class SchemaConverter {
  private defs = new Map<string, Schema>();
  private inProgress = new Set<string>();
  /** Declaration -> the name its $def has (qualified by stream when two share a name). */
  private readonly names = new Map<ts.Declaration, string>();

  constructor(
    private readonly checker: ts.TypeChecker,
    private readonly closed: boolean,
  ) {}

  /** A self-contained schema document for `type`, with the $defs it uses. */
  document(type: ts.Type, head: { title: string; description: string }): Schema {
    this.defs = new Map();
    const body = this.convert(type);
    const doc: Schema = { $schema: DRAFT, title: head.title, description: head.description };
    if (typeof body.$ref === "string") {
      // The data type itself is named: its definition is the document.
      const name = body.$ref.slice("#/$defs/".length);
      const { description, ...def } = this.defs.get(name)!;
      if (description) doc.description = `${head.description} ${description}`;
      Object.assign(doc, def);
      this.defs.delete(name);
      if (this.refersTo(name)) throw new Error(`${name} refers to itself; not supported`);
    } else Object.assign(doc, body);
    if (this.defs.size > 0)
      doc.$defs = Object.fromEntries([...this.defs].sort(([a], [b]) => a.localeCompare(b)));
    return doc;
  }

  private refersTo(name: string): boolean {
    return [...this.defs.values()].some((d) => JSON.stringify(d).includes(`"#/$defs/${name}"`));
  }

  convert(type: ts.Type): Schema {
    const named = this.namedDeclaration(type);
    if (named) {
      const name = this.defName(named);
      if (!this.defs.has(name) && !this.inProgress.has(name)) {
        this.inProgress.add(name);
        const def = this.structure(type);
        const doc = this.docOf(named);
        this.defs.set(name, doc ? { description: doc, ...def } : def);
        this.inProgress.delete(name);
      }
      return { $ref: `#/$defs/${name}` };
    }
    return this.structure(type);
  }

  /** Interfaces and type aliases declared in streams/ are named; library types (Readonly, Record) are not. */
  private namedDeclaration(type: ts.Type): ts.Declaration | undefined {
    const alias = type.aliasSymbol?.declarations?.[0];
    if (alias && inStreams(alias) && ts.isTypeAliasDeclaration(alias)) return alias;
    if (type.flags & ts.TypeFlags.Object && !type.aliasSymbol) {
      const decl = type.symbol?.declarations?.[0];
      if (decl && inStreams(decl) && ts.isInterfaceDeclaration(decl)) return decl;
    }
    return undefined;
  }

  private defName(decl: ts.Declaration): string {
    const known = this.names.get(decl);
    if (known) return known;
    const base = (decl as ts.InterfaceDeclaration | ts.TypeAliasDeclaration).name.text;
    const taken = [...this.names].some(([d, n]) => n === base && d !== decl);
    const stream = decl.getSourceFile().fileName.replace(/^.*\//, "").replace(/\.ts$/, "");
    const name = taken ? `${stream}.${base}` : base;
    this.names.set(decl, name);
    return name;
  }

  private docOf(decl: ts.Declaration): string {
    const symbol = (decl as ts.InterfaceDeclaration).name
      ? this.checker.getSymbolAtLocation((decl as ts.InterfaceDeclaration).name)
      : undefined;
    return symbol ? docText(symbol, this.checker) : "";
  }

  private structure(type: ts.Type): Schema {
    const f = type.flags;
    if (f & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return {};
    if (f & ts.TypeFlags.TypeParameter) {
      const constraint = this.checker.getBaseConstraintOfType(type);
      return constraint && constraint !== type ? this.convert(constraint) : {};
    }
    if (f & ts.TypeFlags.String) return { type: "string" };
    if (f & ts.TypeFlags.Number) return { type: "number" };
    if (f & ts.TypeFlags.Boolean) return { type: "boolean" };
    if (f & ts.TypeFlags.Null) return { type: "null" };
    if (f & ts.TypeFlags.StringLiteral) return { const: (type as ts.StringLiteralType).value };
    if (f & ts.TypeFlags.NumberLiteral) return { const: (type as ts.NumberLiteralType).value };
    if (f & ts.TypeFlags.BooleanLiteral) return { const: this.checker.typeToString(type) === "true" };
    if (type.isUnion()) return this.union(type.types);
    if (f & ts.TypeFlags.Object) {
      if (this.checker.isArrayType(type) || this.checker.isTupleType(type)) {
        const [item] = this.checker.getTypeArguments(type as ts.TypeReference);
        if (this.checker.isTupleType(type)) throw new Error("tuple types are not supported");
        return { type: "array", items: item ? this.convert(item) : {} };
      }
      return this.object(type);
    }
    throw new Error(`cannot express type ${this.checker.typeToString(type)} as JSON Schema`);
  }

  private union(members: readonly ts.Type[]): Schema {
    // Optional properties carry `undefined`: absence is what "required" says.
    let types = members.filter((t) => !(t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Void)));
    // `boolean` is the union true | false.
    const trues = types.filter((t) => t.flags & ts.TypeFlags.BooleanLiteral);
    const parts: Schema[] = [];
    if (trues.length === 2) {
      types = types.filter((t) => !(t.flags & ts.TypeFlags.BooleanLiteral));
      parts.push({ type: "boolean" });
    }
    parts.push(...types.map((t) => this.convert(t)));
    if (parts.length === 1) return parts[0]!;
    if (parts.every((p) => "const" in p && Object.keys(p).length === 1))
      return { enum: parts.map((p) => p.const) };
    if (parts.every((p) => ("const" in p && Object.keys(p).length === 1) || isTypeOnly(p, "null"))) {
      return { enum: parts.map((p) => ("const" in p ? p.const : null)) };
    }
    if (parts.every((p) => Object.keys(p).length === 1 && typeof p.type === "string")) {
      return { type: parts.map((p) => p.type) };
    }
    return { anyOf: parts };
  }

  private object(type: ts.Type): Schema {
    const properties: Record<string, Schema> = {};
    const required: string[] = [];
    for (const prop of this.checker.getPropertiesOfType(type)) {
      const decl = prop.valueDeclaration ?? prop.declarations?.[0];
      const propType = decl
        ? this.checker.getTypeOfSymbolAtLocation(prop, decl)
        : this.checker.getTypeOfSymbol(prop);
      const schema = this.convert(propType);
      const doc = docText(prop, this.checker);
      properties[prop.name] = doc ? withDescription(schema, doc) : schema;
      if (!(prop.flags & ts.SymbolFlags.Optional)) required.push(prop.name);
    }
    const out: Schema = { type: "object" };
    if (Object.keys(properties).length > 0) out.properties = properties;
    if (required.length > 0) out.required = required;
    const index = this.checker.getIndexInfoOfType(type, ts.IndexKind.String);
    if (index) {
      const value = this.convert(index.type);
      // `[field: string]: unknown` next to named fields: anything else is carried as sent.
      if (Object.keys(value).length > 0 || Object.keys(properties).length === 0)
        out.additionalProperties = value;
    } else if (this.closed) out.additionalProperties = false;
    return out;
  }
}

function isTypeOnly(s: Schema, type: string): boolean {
  return Object.keys(s).length === 1 && s.type === type;
}

function withDescription(schema: Schema, description: string): Schema {
  // Next to a $ref, a description is fine in 2020-12.
  return { description, ...schema };
}

function inStreams(decl: ts.Declaration): boolean {
  return resolve(dirname(decl.getSourceFile().fileName)) === STREAMS;
}

function docText(symbol: ts.Symbol, checker: ts.TypeChecker): string {
  return ts.displayPartsToString(symbol.getDocumentationComment(checker)).replace(/\s+/g, " ").trim();
}

function envelopeSchema(
  converter: SchemaConverter,
  checker: ts.TypeChecker,
  files: readonly ts.SourceFile[],
): Schema {
  const file = files.find((f) => f.fileName.endsWith("/event-schema.ts"));
  if (!file) throw new Error("streams/event-schema.ts not found");
  let envelope: ts.InterfaceDeclaration | undefined;
  ts.forEachChild(file, (n) => {
    if (ts.isInterfaceDeclaration(n) && n.name.text === "Envelope") envelope = n;
  });
  if (!envelope) throw new Error("interface Envelope not found in streams/event-schema.ts");
  const type = checker.getTypeAtLocation(envelope.name);
  const doc = converter.document(type, {
    title: "chronomad log record (envelope)",
    description:
      "One record of the log, as plain msgpack. `type` and `v` name the schema of `data`: " +
      "docs/schemas/<type>.v<v>.json (index.json lists them).",
  });
  // Envelope<T, D> is generic: `type` is any event type name (T extends string), `data` anything (D).
  const props = doc.properties as Record<string, Schema>;
  props.v = { ...props.v, type: "integer", minimum: 1 };
  return doc;
}

function indexOf(events: readonly EventTypeInfo[]): Schema {
  return {
    $comment: "Written by scripts/event-schemas.mts (npm run docs:schemas); do not edit.",
    envelope: "envelope.json",
    events: Object.fromEntries(
      events.map((e) => [
        e.type,
        {
          version: e.version,
          schema: `${e.type}.v${e.version}.json`,
          dataType: e.dataType,
          stream: e.stream,
          upcasters: e.upcasters,
        },
      ]),
    ),
  };
}

function versionsTable(events: readonly EventTypeInfo[]): string {
  const cell = (s: string) => s.replace(/\|/g, "\\|");
  const rows = events.map((e) => {
    const ups = e.upcasters
      .map((u) => `v${u.from}→v${u.to}: ${u.note ? `${cell(u.note)} ` : ""}\`${cell(u.code)}\``)
      .join("<br>");
    return [
      `\`${e.type}\``,
      String(e.version),
      `[${e.type}.v${e.version}.json](schemas/${e.type}.v${e.version}.json)`,
      ups || "none (always v1)",
    ];
  });
  const header = [
    "type",
    "current version",
    "data schema",
    "upcasters (applied in order when an older record is read)",
  ];
  // Columns padded as the repository's formatter (biome) lays Markdown tables out, so `npm run lint` accepts the doc.
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** JSON as the repository's formatter (biome, line width 110) prints it, so `npm run lint` accepts the files. */
function json(value: unknown): string {
  return `${printJson(value, "", 0)}\n`;
}

const LINE_WIDTH = 110;

/** `column`: where the value starts on its line; `after`: characters that follow it there (a comma). */
function printJson(value: unknown, indent: string, column: number, after = 0): string {
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    const flat = value.every((v) => typeof v !== "object" || v === null || Object.keys(v).length === 0);
    if (flat) {
      const line = `[${value.map((v) => JSON.stringify(v)).join(", ")}]`;
      if (column + line.length + after <= LINE_WIDTH) return line;
    }
    const items = value.map(
      (v, i) => inner + printJson(v, inner, inner.length, i < value.length - 1 ? 1 : 0),
    );
    return `[\n${items.join(",\n")}\n${indent}]`;
  }
  const entries = Object.entries(value);
  if (entries.length === 0) return "{}";
  const lines = entries.map(([k, v], i) => {
    const head = `${inner}${JSON.stringify(k)}: `;
    return head + printJson(v, inner, head.length, i < entries.length - 1 ? 1 : 0);
  });
  return `{\n${lines.join(",\n")}\n${indent}}`;
}

/** docs/log-format.md with the table between the markers replaced. */
export function withTable(doc: string, table: string): string {
  const begin = doc.indexOf(TABLE_BEGIN);
  const end = doc.indexOf(TABLE_END);
  if (begin < 0 || end < begin) throw new Error(`${DOC} lacks the markers ${TABLE_BEGIN} ... ${TABLE_END}`);
  return `${doc.slice(0, begin + TABLE_BEGIN.length)}\n${table}\n${doc.slice(end)}`;
}

/** Every generated file, the doc included, as it should be on disk now. */
export async function expectedFiles(): Promise<Map<string, string>> {
  const generated = generateEventSchemas();
  const files = new Map(generated.files);
  files.set(DOC, withTable(await readFile(join(ROOT, DOC), "utf8"), generated.table));
  return files;
}

async function main(args: readonly string[]): Promise<number> {
  const check = args.includes("--check");
  const files = await expectedFiles();
  const stale: string[] = [];
  for (const [path, content] of files) {
    const current = await readFile(join(ROOT, path), "utf8").catch(() => undefined);
    if (current === content) continue;
    stale.push(path);
    if (!check) await writeFile(join(ROOT, path), content);
  }
  if (check) {
    for (const p of stale) process.stderr.write(`out of date: ${p}\n`);
    return stale.length > 0 ? 1 : 0;
  }
  process.stderr.write(`event schemas: ${files.size} files, ${stale.length} rewritten\n`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
