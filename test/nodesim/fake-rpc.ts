import type { RpcCaller } from "../../src/nodesim/rpc-client.ts";
import type { Clock } from "../../src/util/clock.ts";

export interface RecordedCall {
  readonly method: string;
  readonly at: number;
  readonly body: Record<string, unknown>;
}

/**
 * A stand-in for the server's client RPC, on a virtual clock: answers at
 * once (Node.GetClientAllocs blocks until an allocation is placed or
 * changed), and records every call with the clock's time.
 */
export class FakeRpc implements RpcCaller {
  readonly calls: RecordedCall[] = [];
  private index = 1;
  private readonly rows = new Map<string, Record<string, unknown>>();
  private waiters: (() => void)[] = [];

  constructor(private readonly clock: Clock) {}

  async call<T>(
    method: string,
    body: unknown,
    _token: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<T> {
    const b = body as Record<string, unknown>;
    this.calls.push({ method, at: this.clock.now(), body: structuredClone(b) });
    switch (method) {
      case "Node.Register":
      case "Node.UpdateStatus":
        return { HeartbeatTTL: 10e9 } as T;
      case "Node.UpdateAlloc":
        return { Index: this.index } as T;
      case "Alloc.GetAllocs":
        return { Allocs: (b.AllocIDs as string[]).map((id) => this.rows.get(id)), Index: this.index } as T;
      case "Node.GetClientAllocs": {
        while ((b.MinQueryIndex as number) >= this.index) {
          await new Promise<void>((resolve, reject) => {
            this.waiters.push(resolve);
            options.signal?.addEventListener("abort", () => reject(new Error("aborted")));
          });
        }
        const allocs = Object.fromEntries(
          [...this.rows].map(([id, r]) => [id, r.AllocModifyIndex as number]),
        );
        return { Allocs: allocs, Index: this.index } as T;
      }
      default:
        return {} as T;
    }
  }

  /** Places (or updates) an allocation the way the server would show it to the node. */
  put(row: Record<string, unknown>): void {
    this.index++;
    this.rows.set(row.ID as string, { ...row, AllocModifyIndex: this.index });
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w();
  }

  updates(): RecordedCall[] {
    return this.calls.filter((c) => c.method === "Node.UpdateAlloc");
  }
}
