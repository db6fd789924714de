import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { blockOrder } from "../../../src/jobs/hcl/hcl-block-order.ts";
import { HclParser } from "../../../src/jobs/hcl/hcl-parser.ts";
import { parseJobspec } from "../../../src/jobs/hcl/parse-jobspec.ts";

/**
 * test/fixtures/jobspec/<name>.hcl (with <name>.vars as the request's
 * Variables) parses to <name>.json, which is what Nomad v1.6.1's
 * jobspec2.ParseWithConfig gives for it (json.MarshalIndent of the
 * api.Job), recorded with a small Go program on Nomad's jobspec2 package,
 * built beside the project from a copy of Nomad's source at that tag and not
 * kept here (the JSON then formatted by biome).
 */
const FIXTURES = join(import.meta.dirname, "../../fixtures/jobspec");
const parser = new HclParser();
afterAll(() => parser.close());

const parse = (hcl: string, vars = "") => parseJobspec(parser, hcl, vars);
const failure = async (hcl: string, vars = "") => {
  try {
    await parse(hcl, vars);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("parsed");
};

describe("parseJobspec against Nomad's jobspec2", () => {
  const names = readdirSync(FIXTURES)
    .filter((f) => f.endsWith(".hcl"))
    .map((f) => f.slice(0, -4));
  for (const name of names) {
    it(`${name}.hcl gives Nomad's api.Job`, async () => {
      const hcl = readFileSync(join(FIXTURES, `${name}.hcl`), "utf8");
      let vars = "";
      try {
        vars = readFileSync(join(FIXTURES, `${name}.vars`), "utf8");
      } catch {}
      const expected = JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), "utf8"));
      expect(await parse(hcl, vars)).toEqual(expected);
    });
  }
});

const task = `task "t" {\n driver = "docker"\n}`;

describe("parseJobspec", () => {
  it("keeps groups, tasks and ports in the order written (hcl2json sorts labels)", async () => {
    const job = await parse(`job "j" {
  group "zeta" {
    network {
      port "z" {}
      port "a" { static = 80 }
      port "m" {}
    }
    task "second" { driver = "d" }
    task "first" { driver = "d" }
  }
  group "alpha" {
    ${task}
  }
}`);
    const groups = job.TaskGroups as {
      Name: string;
      Tasks: { Name: string }[];
      Networks: Record<string, unknown>[];
    }[];
    expect(groups.map((g) => g.Name)).toEqual(["zeta", "alpha"]);
    expect(groups[0]!.Tasks.map((t) => t.Name)).toEqual(["second", "first"]);
    expect(groups[0]!.Networks[0]).toMatchObject({
      DynamicPorts: [{ Label: "z" }, { Label: "m" }],
      ReservedPorts: [{ Label: "a", Value: 80 }],
    });
  });

  it("evaluates variables from the request's Variables, HCL or JSON, and converts them to their type", async () => {
    const hcl = `variable "n" { type = number }\nvariable "on" {\n type = bool\n default = false\n}\njob "j" {\n group "g" {\n count = var.n\n meta { on = "\${var.on}" }\n ${task}\n }\n}`;
    const group = (await parse(hcl, 'n = "4"\non = true')).TaskGroups as Record<string, unknown>[];
    expect(group[0]).toMatchObject({ Count: 4, Meta: { on: "true" } });
    const json = (await parse(hcl, '{"n": 2}')).TaskGroups as Record<string, unknown>[];
    expect(json[0]).toMatchObject({ Count: 2, Meta: { on: "false" } });
    expect(await failure(hcl, 'n = "many"')).toBe(
      "Invalid value for variable; The value for n is not compatible with the variable's type constraint: a number is required.",
    );
    expect(await failure(hcl)).toMatch(
      /^Unset variable "n"; A used variable must be set or have a default value/,
    );
  });

  it("leaves references for Nomad's runtime as written, and unescapes $${", async () => {
    const job = await parse(
      `job "j" {\n group "g" {\n task "t" {\n driver = "d"\n env {\n A = attr.kernel.name\n B = "\${node.unique.id}-\${NOMAD_ALLOC_INDEX}"\n C = "$\${HOME}"\n D = env["PATH"]\n }\n }\n }\n}`,
    );
    const env = (job.TaskGroups as { Tasks: { Env: unknown }[] }[])[0]!.Tasks[0]!.Env;
    // Nomad's interpolation syntax, built so it does not read as a JS template mistake.
    const ref = (s: string) => `$\{${s}}`;
    expect(env).toEqual({
      A: ref("attr.kernel.name"),
      B: `${ref("node.unique.id")}-${ref("NOMAD_ALLOC_INDEX")}`,
      C: ref("HOME"),
      D: ref('env["PATH"]'),
    });
  });

  it("refuses what it cannot evaluate, naming the construct and where it is", async () => {
    const inTask = (line: string) =>
      `job "j" {\n group "g" {\n task "t" {\n driver = "d"\n ${line}\n }\n }\n}`;
    expect(await failure(inTask('kill_timeout = upper("5s")'))).toMatch(
      /^job "j" > group "g" > task "t" > kill_timeout: unsupported expression "\$\{upper\("5s"\)\}": chronomad evaluates literals/,
    );
    expect(await failure(inTask("config { x = 1 + 2 }"))).toMatch(/unsupported expression "\$\{1 \+ 2\}"/);
    expect(await failure(inTask('config { x = "%{ if true }y%{ endif }" }'))).toMatch(
      /unsupported template directive "%\{if true\}"/,
    );
    expect(await failure(`job "j" {\n dynamic "group" {\n for_each = [1]\n content {}\n }\n}`)).toMatch(
      /unsupported dynamic block/,
    );
    expect(
      await failure(
        'variable "x" {\n validation {\n condition = true\n error_message = "No."\n }\n}\njob "j" {}',
      ),
    ).toMatch(/^variable "x": unsupported variable validation block/);
    expect(await failure(inTask("kill_timeout = var.nope"))).toMatch(
      /Unsupported attribute; This object does not have an attribute named "nope"/,
    );
  });

  it("gives HCL's and jobspec2's errors for specs that are wrong", async () => {
    expect(await failure('job "x" {\n a = \n}')).toBe(
      "input.hcl:2,6-3,1: Invalid expression; Expected the start of an expression, but found an invalid expression token.",
    );
    expect(await failure("")).toBe("Missing job block; A job block is required");
    expect(await failure('job "a" {}\njob "b" {}')).toBe(
      'Duplicate job block; Only one block of type "job" is allowed.',
    );
    expect(await failure('job "j" {\n nope = 1\n}')).toBe(
      'job "j": Unsupported argument; An argument named "nope" is not expected here.',
    );
    expect(
      await failure(`job "j" {\n group "g" {\n task "t" {\n driver = "d"\n kill_timeout = "soon"\n }\n }\n}`),
    ).toMatch(
      /kill_timeout: Unsuitable value type; Unsuitable duration value: time: invalid duration "soon"$/,
    );
    expect(await failure('{"job": {}}')).toMatch(/JSON job specs are not parsed here/);
  });
});

describe("blockOrder", () => {
  it("numbers labeled blocks by where they start, past strings, heredocs, comments and expressions", () => {
    const order = blockOrder(`# group "commented" {}
job "j" {
  x = "group \\"fake\\" {"
  y = { group = "z" }
  t = <<EOT
group "heredoc" {
EOT
  group "b" { count = 1 }
  /* group "c" {} */
  group "a" {}
}`);
    const key = (...p: string[]) => p.join("\u0000");
    expect([...order.keys()]).toEqual([
      key("job", "j"),
      key("job", "j", "group", "b"),
      key("job", "j", "group", "a"),
    ]);
  });
});

describe("HclParser", () => {
  it("parses off the event loop: the loop keeps turning while a parse runs", async () => {
    const own = new HclParser();
    try {
      let turns = 0;
      let running = true;
      const spin = () => {
        turns++;
        if (running) setImmediate(spin);
      };
      setImmediate(spin);
      await own.parse('job "j" {}');
      running = false;
      expect(turns).toBeGreaterThan(10);
    } finally {
      await own.close();
    }
  });

  it("gives up on a parse past its deadline, and parses the next with a fresh worker", async () => {
    const own = new HclParser({ timeoutMs: 1 });
    try {
      await expect(own.parse('job "j" {}')).rejects.toThrow(/parsing took longer than 0.001s/);
    } finally {
      await own.close();
    }
    expect(await parser.parse('job "j" {}')).toEqual({ job: { j: [{}] } });
  });
});
