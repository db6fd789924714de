import { BehaviorSubject } from "rxjs";
import type { ServerMember } from "../leadership.ts";
import type { Election } from "./open-election.ts";

/**
 * The "election" of a read-only server (serve --read-only): it takes part
 * in none, whatever its log (no Kafka consumer group joined, no claim
 * appended), never leads, so no leader service ever runs. Asked who leads,
 * it names itself: it is the only server answering for the view of the log
 * it serves, and tools that look for a leader (health checks, the UI) find
 * one there.
 */
export class ReadOnlyElection implements Election {
  readonly exclusive = true;
  readonly leader$ = new BehaviorSubject(false).asObservable();
  private address = "";

  constructor(private readonly serverName: string) {}

  async join(address: string): Promise<void> {
    this.address = address;
  }

  async close(): Promise<void> {}

  isLeader(): boolean {
    return false;
  }

  leaderAddress(): string {
    return this.address;
  }

  peers(): readonly string[] {
    return [this.address];
  }

  lastContactMs(): number {
    return 0;
  }

  members(): readonly ServerMember[] {
    return [{ name: this.serverName, address: this.address, rpcAddress: "", leader: false, self: true }];
  }
}
