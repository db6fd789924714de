import { gunzipSync } from "node:zlib";
import { Profile } from "pprof-format";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FakeClientPeer } from "../../rpc/fake-client-peer.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { callsOf } from "./client-agent-fixtures.ts";

/** The profile's sample types, as `type/unit`. */
function sampleTypes(body: ArrayBuffer): string[] {
  const profile = Profile.decode(gunzipSync(Buffer.from(body)));
  const text = (i: number | bigint) => profile.stringTable.strings[Number(i)];
  return profile.sampleType.map((t) => `${text(t.type)}/${text(t.unit)}`);
}

describe("GET /v1/agent/pprof/<profile> of this server", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ args: ["--server-name", "alpha", "--enable-debug"] });
  });
  afterAll(async () => {
    await s.stop();
  });

  it("takes a CPU profile of `seconds` in pprof's format, with Go's headers", async () => {
    const res = await s.call("/v1/agent/pprof/profile?seconds=1");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="profile"');
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(sampleTypes(await res.arrayBuffer())).toEqual(["sample/count", "wall/nanoseconds"]);
  });

  it("takes one CPU profile at a time, as Go's runtime does", async () => {
    // Asked at once: whichever the server takes first holds the profiler for 2 s, the other is refused.
    const answers = await Promise.all(
      [1, 2].map(async () => {
        const res = await s.call("/v1/agent/pprof/profile?seconds=2");
        return res.status === 200 ? 200 : `${res.status} ${await res.text()}`;
      }),
    );
    expect(answers.sort()).toEqual([200, "500 cpu profiling already in use"]);
  });

  it("serves the sampled heap and the command line", async () => {
    const heap = await s.call("/v1/agent/pprof/heap");
    expect(heap.status).toBe(200);
    expect(heap.headers.get("content-disposition")).toBe('attachment; filename="heap"');
    expect(sampleTypes(await heap.arrayBuffer())).toEqual(["inuse_objects/count", "inuse_space/bytes"]);
    const cmdline = await s.call("/v1/agent/pprof/cmdline");
    expect(cmdline.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect((await cmdline.text()).split("\0")).toEqual([
      process.argv[0],
      ...process.execArgv,
      ...process.argv.slice(1),
    ]);
  });

  it("answers 404 for a profile Go does not know either, 501 for Go's own", async () => {
    const invalid = await s.call("/v1/agent/pprof/invalid");
    expect([invalid.status, await invalid.text()]).toEqual([404, "Pprof profile not found profile: invalid"]);
    for (const name of ["goroutine", "threadcreate", "allocs", "block", "mutex", "trace"]) {
      const res = await s.call(`/v1/agent/pprof/${name}`);
      expect(res.status, name).toBe(501);
      expect(await res.text()).toContain("Node.js");
    }
    expect((await s.call("/v1/agent/pprof/")).status).toBe(404);
  });

  it("takes server_id as Nomad does: this server by name or as leader, an unknown one a 500", async () => {
    for (const id of ["alpha", "alpha.global", "leader"]) {
      expect((await s.call(`/v1/agent/pprof/cmdline?server_id=${id}`)).status, id).toBe(200);
    }
    const unknown = await s.call("/v1/agent/pprof/cmdline?server_id=unknown.global");
    expect([unknown.status, await unknown.text()]).toEqual([500, "unknown Nomad server unknown.global"]);
    const both = await s.call("/v1/agent/pprof/heap?node_id=a&server_id=b");
    expect([both.status, await both.text()]).toEqual([400, "Cannot target node and server simultaneously"]);
    const node = await s.call("/v1/agent/pprof/heap?node_id=abc");
    expect([node.status, await node.text()]).toEqual([404, 'Unknown node "abc"']);
  });
});

describe("GET /v1/agent/pprof without enable_debug", () => {
  it("refuses this server's profiles when ACLs are off, as Nomad does", async () => {
    const s = await startTestServer();
    try {
      const res = await s.call("/v1/agent/pprof/heap");
      expect([res.status, await res.text()]).toEqual([403, "Permission denied"]);
      const self = (await (await s.call("/v1/agent/self")).json()) as { config: { EnableDebug: boolean } };
      expect(self.config.EnableDebug).toBe(false);
    } finally {
      await s.stop();
    }
  });
});

describe("GET /v1/agent/pprof/<profile>?node_id=", () => {
  const agents: FakeClientPeer[] = [];
  const servers: TestServer[] = [];
  afterEach(async () => {
    for (const a of agents.splice(0)) a.close();
    for (const s of servers.splice(0)) await s.stop();
  });

  it("passes the request to the client agent's Agent.Profile and answers its payload with its headers", async () => {
    // Without enable_debug: the client agent decides, as with Nomad.
    const s = await startTestServer();
    servers.push(s);
    const payload = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0xff, 0x00, 0x80]);
    const agent = new FakeClientPeer({
      rpc: {
        "Agent.Profile": (args) =>
          args.Profile === "invalid"
            ? Promise.reject(new Error("RPC Error:: 404,Pprof profile not found profile: invalid"))
            : {
                AgentID: "node",
                Payload: payload,
                HTTPHeaders: {
                  "Content-Type": "application/octet-stream",
                  "X-Content-Type-Options": "nosniff",
                },
              },
      },
    });
    agents.push(agent);
    await agent.connect(s.rpcAddress);

    const res = await s.call(`/v1/agent/pprof/goroutine?node_id=${agent.id}&debug=2&gc=x`, {
      headers: { "X-Nomad-Token": "tok" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Buffer.from(await res.arrayBuffer())).toEqual(payload);
    expect(callsOf(agent, "Agent.Profile")[0]).toMatchObject({
      ReqType: "lookup",
      Profile: "goroutine",
      Seconds: 1,
      Debug: 2,
      GC: 0,
      NodeID: agent.id,
      AuthToken: "tok",
    });
    const cpu = await s.call(`/v1/agent/pprof/profile?node_id=${agent.id}&seconds=3`);
    expect(cpu.status).toBe(200);
    expect(callsOf(agent, "Agent.Profile")[1]).toMatchObject({ ReqType: "cpu", Seconds: 3, Profile: "" });

    const invalid = await s.call(`/v1/agent/pprof/invalid?node_id=${agent.id}`);
    expect([invalid.status, await invalid.text()]).toEqual([404, "Pprof profile not found profile: invalid"]);
  });
});
