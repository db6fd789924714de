import type { Logger } from "pino";
import type { ServiceCalls } from "./alloc-services.ts";
import { type RpcCaller, RpcError } from "./rpc-client.ts";
import type { ServiceRegistrationBody } from "./service-specs.ts";
import type { TimerQueue } from "./timer-queue.ts";

/** What the calls need of their node: its secret, and whether it can reach the servers now. */
export interface ServiceCallsNode {
  readonly name: string;
  readonly secret: string;
  readonly up: boolean;
}

/** Nomad's RemoveWorkload backoff: 100 ms, doubling; a few tries within about a second. */
const RETRY_FIRST_MS = 100;
const RETRIES = 3;

/** Nomad's words for a delete of a registration the servers no longer hold; the client takes it as done. */
const NOT_FOUND = "service registration not found";

/**
 * ServiceRegistration.Upsert and DeleteByID as a simulated node makes them.
 * A call the servers could not take (no answer, or a 5xx) is tried again a
 * few times; a refusal is logged and dropped, as Nomad's client logs it. A
 * node that is partitioned or stopped reaches no server: its calls are not
 * made (a real one's would fail).
 */
export class NodeServiceCalls implements ServiceCalls {
  constructor(
    private readonly rpc: RpcCaller,
    private readonly timers: TimerQueue,
    private readonly node: ServiceCallsNode,
    private readonly logger: Logger,
  ) {}

  upsert(services: readonly ServiceRegistrationBody[]): Promise<void> {
    return this.send("ServiceRegistration.Upsert", { Services: services, Region: "global" });
  }

  deleteByID(namespace: string, id: string): Promise<void> {
    return this.send("ServiceRegistration.DeleteByID", { ID: id, Namespace: namespace, Region: "global" });
  }

  private async send(method: string, body: Record<string, unknown>): Promise<void> {
    for (let attempt = 0; this.node.up; attempt++) {
      try {
        await this.rpc.call(method, body, this.node.secret);
        return;
      } catch (err) {
        if (err instanceof RpcError && err.status === 404 && err.message.includes(NOT_FOUND)) return;
        const retryable = !(err instanceof RpcError) || err.status === 0 || err.status >= 500;
        if (!retryable || attempt >= RETRIES) {
          this.logger.debug({ err, node: this.node.name, method }, "service registration call failed");
          return;
        }
        await new Promise<void>((resolve) => this.timers.after(RETRY_FIRST_MS * 2 ** attempt, resolve));
      }
    }
  }
}
