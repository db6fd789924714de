import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

async function validate(body: unknown): Promise<{ status: number; body: unknown; text: string }> {
  const server = servers[0] ?? (await startTestServer());
  if (!servers.includes(server)) servers.push(server);
  const res = await server.call("/v1/validate/job", { method: "PUT", body: JSON.stringify(body) });
  const text = await res.text();
  return {
    status: res.status,
    text,
    body: res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text,
  };
}

const job = (extra: Record<string, unknown> = {}) => ({
  ID: "web",
  Datacenters: ["dc1"],
  TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "docker" }] }],
  ...extra,
});

describe("PUT /v1/validate/job", () => {
  it("answers a valid job with no errors, and writes nothing", async () => {
    await validate({ Job: job() });
    const before = servers[0]!.log.lastIndex();
    const res = await validate({ Job: job() });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      DriverConfigValidated: true,
      ValidationErrors: null,
      Error: "",
      Warnings: "",
    });
    expect(servers[0]!.log.lastIndex()).toBe(before);
  });

  it("lists each of Nomad's validation errors in a 200, and the whole as Error", async () => {
    const res = await validate({ Job: job({ ID: undefined, Name: "redis", Priority: 500 }) });
    expect(res.status).toBe(200);
    const body = res.body as { ValidationErrors: string[]; Error: string; DriverConfigValidated: boolean };
    expect(body.ValidationErrors).toEqual(["Missing job ID", "job priority must be between [1, 100]"]);
    expect(body.Error).toBe(
      "2 errors occurred:\n\t* Missing job ID\n\t* job priority must be between [1, 100]\n\n",
    );
    expect(body.DriverConfigValidated).toBe(true);
  });

  it("refuses a body without a job, or a job of the wrong shape, with a 400", async () => {
    expect(await validate({})).toMatchObject({ status: 400, text: "Job must be specified" });
    expect(await validate({ Job: job({ Priority: "high" }) })).toMatchObject({
      status: 400,
      text: "Job.Priority must be a number, not string",
    });
    const server = servers[0]!;
    expect((await server.call("/v1/validate/job")).status).toBe(405);
  });
});
