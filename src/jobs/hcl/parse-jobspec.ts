import { blockOrder, pathKey } from "./hcl-block-order.ts";
import type { EvalScope } from "./hcl-expressions.ts";
import { JobspecError } from "./hcl-expressions.ts";
import { type HclParser, HclSyntaxError } from "./hcl-parser.ts";
import { blockList, resolveScope } from "./hcl-variables.ts";
import { type DecodeContext, decodeStruct, decodeTaskBlock, type Json, stringMap } from "./jobspec-decode.ts";

/**
 * Nomad's jobspec2.ParseWithConfig for `PUT /v1/jobs/parse`: an HCL2 job
 * spec (and the content of a variables file) to the api.Job it describes,
 * without filesystem access. HCL syntax is HashiCorp's own parser's
 * (hcl2json, off the event loop); decoding and normalization follow
 * jobspec2; the expressions evaluated are those hcl-expressions.ts lists.
 * Errors are JobspecError / HclSyntaxError with Nomad's wording where it
 * has one.
 */
export async function parseJobspec(parser: HclParser, hcl: string, variables = ""): Promise<Json> {
  if (isJSON(hcl)) {
    throw new JobspecError(
      "JSON job specs are not parsed here: send the job as JSON to /v1/jobs (chronomad parses HCL2 job specs only)",
    );
  }
  const doc = asDoc(await parser.parse(hcl));
  let varContent: Record<string, unknown> | undefined;
  if (variables.trim() !== "") {
    try {
      varContent = isJSON(variables)
        ? asDoc(JSON.parse(variables))
        : asDoc(await parser.parse(variables, "input.hcl"));
    } catch (err) {
      if (err instanceof HclSyntaxError || err instanceof SyntaxError || err instanceof JobspecError) {
        throw new JobspecError(`unable to parse var content: ${err.message}`);
      }
      throw err;
    }
  }
  for (const key of Object.keys(doc)) {
    if (!["variable", "variables", "locals", "job"].includes(key)) {
      throw new JobspecError(
        Array.isArray(doc[key]) || (doc[key] !== null && typeof doc[key] === "object")
          ? `Unsupported block type; Blocks of type "${key}" are not expected here.`
          : `Unsupported argument; An argument named "${key}" is not expected here.`,
      );
    }
  }
  const scope = resolveScope(doc, varContent);
  return decodeJob({ scope, order: blockOrder(hcl) }, doc.job);
}

function decodeJob(ctx: DecodeContext, raw: unknown): Json {
  if (raw === undefined) throw new JobspecError("Missing job block; A job block is required");
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new JobspecError("Missing name for job; All job blocks must have 1 labels (name).");
  }
  const entries = Object.entries(raw as Record<string, unknown>);
  const blocks = entries.flatMap(([label, bodies]) =>
    blockList(bodies, "job").map((body) => ({ label, body })),
  );
  if (blocks.length > 1) {
    throw new JobspecError('Duplicate job block; Only one block of type "job" is allowed.');
  }
  const { label, body } = blocks[0]!;
  const where = `job "${label}"`;
  const loc = { where, path: ["job", label] };
  const job = decodeStruct(ctx, "Job", body, [], loc, new Set(["meta", "vault", "task"]));
  if (body.meta !== undefined) job.Meta = stringMap(ctx, body.meta, "meta", "string", `${where} > meta`);
  let vault: Json | null = null;
  if (body.vault !== undefined) {
    const bodies = blockList(body.vault, "vault");
    if (bodies.length > 1) {
      throw new JobspecError(`${where}: Duplicate vault block; Only one block of type "vault" is allowed.`);
    }
    vault = decodeStruct(ctx, "Vault", bodies[0]!, [], { where: `${where} > vault`, path: loc.path });
  }
  const tasks: Json[] = [];
  if (body.task !== undefined) {
    if (body.task === null || typeof body.task !== "object" || Array.isArray(body.task)) {
      throw new JobspecError(`${where}: Missing name for task; All task blocks must have 1 labels (name).`);
    }
    const rank = (name: string) =>
      ctx.order.get(pathKey([...loc.path, "task", name])) ?? Number.MAX_SAFE_INTEGER;
    const named = Object.entries(body.task as Record<string, unknown>).sort(([a], [b]) => rank(a) - rank(b));
    for (const [name, bodies] of named) {
      for (const b of blockList(bodies, "task"))
        tasks.push(
          decodeTaskBlock(ctx, b, name, {
            where: `${where} > task "${name}"`,
            path: [...loc.path, "task", name],
          }),
        );
    }
  }
  normalizeJob(job, label, vault, tasks);
  return job;
}

/** jobspec2's normalizeJob. */
function normalizeJob(job: Json, label: string, vault: Json | null, tasks: Json[]): void {
  job.Name ??= label;
  job.ID ??= label;
  const periodic = job.Periodic as Json | null;
  if (periodic && periodic.Spec !== null) periodic.SpecType = "cron";
  normalizeVault(vault);
  if (tasks.length > 0) {
    const alone = tasks.map((t) => ({ ...emptyGroup(), Name: t.Name, Tasks: [t] }));
    job.TaskGroups = [...alone, ...((job.TaskGroups as Json[] | null) ?? [])];
  }
  for (const tg of (job.TaskGroups as Json[] | null) ?? []) {
    normalizeNetworkPorts(tg.Networks as Json[] | null);
    for (const t of (tg.Tasks as Json[] | null) ?? []) {
      const resources = t.Resources as Json | null;
      if (resources) normalizeNetworkPorts(resources.Networks as Json[] | null);
      for (const tmpl of (t.Templates as Json[] | null) ?? []) normalizeTemplate(tmpl);
      normalizeVault(t.Vault as Json | null);
      if (t.Vault === null) t.Vault = vault;
    }
  }
}

function emptyGroup(): Json {
  return decodeStruct({ scope: EMPTY_SCOPE, order: new Map() }, "TaskGroup", {}, [], {
    where: "group",
    path: [],
  });
}

const EMPTY_SCOPE: EvalScope = { vars: {}, locals: {} };

function normalizeVault(v: Json | null): void {
  if (!v) return;
  v.Env ??= true;
  v.DisableFile ??= false;
  v.ChangeMode ??= "restart";
}

/** Ports with a static value are reserved ports; the others stay dynamic. */
function normalizeNetworkPorts(networks: Json[] | null): void {
  for (const n of networks ?? []) {
    const ports = (n.DynamicPorts as Json[] | null) ?? [];
    if (ports.length === 0) continue;
    const dynamic = ports.filter((p) => !((p.Value as number) > 0));
    const reserved = ports.filter((p) => (p.Value as number) > 0);
    n.DynamicPorts = dynamic.length > 0 ? dynamic : null;
    n.ReservedPorts = reserved.length > 0 ? reserved : null;
  }
}

function normalizeTemplate(t: Json): void {
  t.ChangeMode ??= "restart";
  t.Perms ??= "0644";
  t.Splay ??= 5e9;
  t.ErrMissingKey ??= false;
  const script = t.ChangeScript as Json | null;
  if (script) {
    script.Args ??= [];
    script.Timeout ??= 5e9;
    script.FailOnError ??= false;
  }
}

/** Nomad's isJSON: the first character that is not a space is `{`. */
function isJSON(text: string): boolean {
  for (const c of text) {
    if (c === " ") continue;
    return c === "{";
  }
  return false;
}

function asDoc(v: unknown): Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new JobspecError("not an HCL body");
  return v as Record<string, unknown>;
}
