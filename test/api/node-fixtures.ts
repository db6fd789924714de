import { randomUUID } from "node:crypto";
import { pack, unpack } from "msgpackr";
import { expect } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { writeEvents } from "../../src/store/writer.ts";
import type { VirtualClock } from "../../src/util/clock.ts";
import { type AllocationSpec, type AllocJob, newAllocation } from "../../streams/allocs.ts";
import type { TestServer } from "../server-harness.ts";

export const HOUR_NS = 3_600_000_000_000;

/** A minimal Job snapshot as an allocation carries it. */
export function testJob(
  fields: { id?: string; maxClientDisconnectNs?: number | null; type?: string } = {},
): AllocJob {
  return {
    ID: fields.id ?? "web",
    Namespace: "default",
    Type: fields.type ?? "service",
    Priority: 50,
    Version: 0,
    CreateIndex: 1,
    ModifyIndex: 1,
    JobModifyIndex: 1,
    TaskGroups: [{ Name: "frontend", Count: 1, MaxClientDisconnect: fields.maxClientDisconnectNs ?? null }],
  };
}

export interface RpcResult<T = Record<string, unknown>> {
  readonly status: number;
  readonly body: T;
  readonly text: string;
}

/** A simulated Nomad client speaking the client RPC over HTTP. */
export class TestNode {
  readonly id: string;
  secret: string;
  constructor(
    readonly server: TestServer,
    options: { id?: string; secret?: string; name?: string } = {},
  ) {
    this.id = options.id ?? randomUUID();
    this.secret = options.secret ?? randomUUID();
    this.name = options.name ?? `client-${this.id.slice(0, 8)}`;
  }
  readonly name: string;

  async rpc<T = Record<string, unknown>>(
    method: string,
    body: unknown,
    options: { token?: string | null; msgpack?: boolean } = {},
  ): Promise<RpcResult<T>> {
    const headers: Record<string, string> = {};
    const token = options.token === undefined ? this.secret : options.token;
    if (token !== null) headers["X-Nomad-Token"] = token;
    let payload: string | Uint8Array;
    if (options.msgpack) {
      headers["content-type"] = "application/msgpack";
      payload = pack(body);
    } else {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(body);
    }
    const res = await this.server.call(`/v1/rpc/${method}`, { method: "PUT", headers, body: payload });
    const type = res.headers.get("content-type") ?? "";
    if (type.startsWith("application/msgpack")) {
      const bytes = new Uint8Array(await res.arrayBuffer());
      return { status: res.status, body: unpack(bytes) as T, text: "" };
    }
    const text = await res.text();
    let parsed: unknown = {};
    if (type.startsWith("application/json")) parsed = JSON.parse(text);
    return { status: res.status, body: parsed as T, text };
  }

  nodeBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      ID: this.id,
      SecretID: this.secret,
      Datacenter: "dc1",
      Name: this.name,
      HTTPAddr: "10.0.0.7:4646",
      Attributes: { "kernel.name": "linux", "os.name": "ubuntu", "nomad.version": "1.5.6" },
      NodeResources: { Cpu: { CpuShares: 4000 }, Memory: { MemoryMB: 8192 } },
      NodeClass: "",
      Status: "initializing",
      ...extra,
    };
  }

  register(extra: Record<string, unknown> = {}, options: { token?: string | null } = {}) {
    return this.rpc("Node.Register", { Node: this.nodeBody(extra) }, options);
  }

  heartbeat(status = "ready", options: { token?: string | null } = {}) {
    return this.rpc("Node.UpdateStatus", { NodeID: this.id, Status: status }, options);
  }

  /** Node.UpdateAlloc; the answer waits for the 50 ms window, so virtual time is moved along. */
  updateAllocs(
    clock: VirtualClock,
    allocs: { ID: string; ClientStatus: string; ClientDescription?: string }[],
    options: { token?: string | null } = {},
  ) {
    return settle(
      clock,
      this.rpc("Node.UpdateAlloc", { Alloc: allocs.map((a) => ({ NodeID: this.id, ...a })) }, options),
    );
  }
}

/**
 * Waits for `promise` while moving virtual time in 50 ms steps, so a reply
 * held by a timer on the virtual clock (the alloc update window) comes.
 */
export async function settle<T>(clock: VirtualClock, promise: Promise<T>): Promise<T> {
  let done = false;
  const result = promise.finally(() => {
    done = true;
  });
  while (!done) {
    await new Promise((r) => setTimeout(r, 2));
    if (!done) clock.advance(50);
  }
  return result;
}

/** Reads a node until `until` holds, using blocking queries (no sleeps). */
export async function waitForNode(
  server: TestServer,
  id: string,
  until: (n: NodeRow) => boolean,
): Promise<NodeRow> {
  let index = 0;
  for (let i = 0; i < 50; i++) {
    const res = await server.call(`/v1/node/${id}?index=${index}&wait=5s`);
    index = Number(res.headers.get("x-nomad-index"));
    const node = (await res.json()) as NodeRow;
    if (until(node)) return node;
  }
  throw new Error(`node ${id} never reached the expected state`);
}

/** Appends a plan result placing `alloc`, as the plan applier will, and returns the stored row. */
export async function placeAlloc(server: TestServer, fields: Partial<AllocationSpec> & { NodeID: string }) {
  const spec = newAllocation({
    ID: randomUUID(),
    Namespace: "default",
    JobID: "web",
    TaskGroup: "frontend",
    Job: testJob(),
    CreateTime: Date.now() * 1e6,
    ...fields,
  });
  const { outcomes } = await writeEvents(server.store, Date.now(), { kind: "server", id: "test" }, [
    {
      type: "AllocsPlanApplied",
      v: 1,
      data: { EvalID: "", Placed: [spec], Updated: [], Stopped: [], Preempted: [] },
    },
  ]);
  expect(outcomes[0]?.status).toBe("applied");
  return server.store.table<AllocRow>("allocs").get(spec.ID)!;
}

export function allocRow(server: TestServer, id: string): AllocRow {
  return server.store.table<AllocRow>("allocs").get(id)!;
}

export function nodeRow(server: TestServer, id: string): NodeRow {
  return server.store.table<NodeRow>("nodes").get(id)!;
}
