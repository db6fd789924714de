import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.stop();
});

async function parse(body: unknown, method = "PUT") {
  const res = await server.call("/v1/jobs/parse", { method, body: JSON.stringify(body) });
  const text = await res.text();
  return {
    status: res.status,
    text,
    body: (res.headers.get("content-type") ?? "").includes("json")
      ? (JSON.parse(text) as Record<string, unknown>)
      : {},
  };
}

describe("PUT /v1/jobs/parse", () => {
  it("answers the api.Job an HCL2 spec describes, with Nomad's defaults when asked", async () => {
    const plain = await parse({ JobHCL: 'job "example" {}' });
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body).toMatchObject({ ID: "example", Name: "example", Namespace: null, Type: null });
    const canonical = await parse({ JobHCL: 'job "example" {}', Canonicalize: true });
    expect(canonical.status).toBe(200);
    expect(canonical.body).toMatchObject({
      ID: "example",
      Name: "example",
      Namespace: "default",
      Region: "global",
      Type: "service",
      Priority: 50,
    });
  });

  it("takes the spec's variables from Variables", async () => {
    const res = await parse({
      JobHCL: `variable "n" {\n  type = number\n}\njob "j" {\n  group "g" {\n    count = var.n\n    task "t" {\n      driver = "docker"\n    }\n  }\n}`,
      Variables: "n = 3",
      Canonicalize: true,
    });
    expect(res.status, res.text).toBe(200);
    expect((res.body.TaskGroups as { Count: number }[])[0]!.Count).toBe(3);
  });

  it("refuses an empty spec, HCL1, a spec too large and one that does not parse, with a 400", async () => {
    expect(await parse({})).toMatchObject({ status: 400, text: "Job spec is empty" });
    expect(await parse({ JobHCL: 'job "x" {}', HCLv1: true })).toMatchObject({
      status: 400,
      text: expect.stringMatching(/^HCL1 job specs are not supported/),
    });
    expect(await parse({ JobHCL: `job "x" {}\n#${"x".repeat(300_000)}` })).toMatchObject({
      status: 400,
      text: expect.stringMatching(
        /^job spec and variables are 300012 bytes; chronomad parses up to 262144 bytes$/,
      ),
    });
    expect(await parse({ JobHCL: 'job "x" {\n a = \n}' })).toMatchObject({
      status: 400,
      text: "Failed to parse job: input.hcl:2,6-3,1: Invalid expression; Expected the start of an expression, but found an invalid expression token.",
    });
    expect(await parse({ JobHCL: 'job "x" {\n priority = 1 + 1\n}' })).toMatchObject({
      status: 400,
      text: expect.stringMatching(/^Failed to parse job: job "x" > priority: unsupported expression/),
    });
    expect((await server.call("/v1/jobs/parse")).status).toBe(405);
  });
});
