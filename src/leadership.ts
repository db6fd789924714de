import { BehaviorSubject, type Observable } from "rxjs";

/** One server of the cluster, as the election knows it. */
export interface ServerMember {
  /** Its server_name. */
  readonly name: string;
  /** Its advertised HTTP address (host:port). */
  readonly address: string;
  /** Its advertised RPC address (host:port), where Nomad's client agents connect; "" when unknown. */
  readonly rpcAddress?: string;
  readonly leader: boolean;
  /** Whether it is the server answering. */
  readonly self: boolean;
}

/**
 * Who leads the cluster, as this server sees it. Only the leader runs the
 * services (scheduler, heartbeat watcher, ...). Backends shared by several
 * servers elect one; a server alone on its log leads itself.
 */
export interface Leadership {
  isLeader(): boolean;
  /** Whether this server leads, now and at every change. */
  readonly leader$: Observable<boolean>;
  /** The leader's advertised address, or "" when none is known. */
  leaderAddress(): string;
  peers(): readonly string[];
  /** Milliseconds since this server last heard from the leader (0 on the leader). */
  lastContactMs(): number;
  /**
   * Every server taking part in the election, by name and address. Optional:
   * a stand-in that knows only addresses (tests) leaves it out, and callers
   * fall back on peers().
   */
  members?(): readonly ServerMember[];
}

export class SoleLeadership implements Leadership {
  private address = "";
  private rpcAddress = "";
  readonly leader$ = new BehaviorSubject(true).asObservable();

  constructor(private readonly serverName = "") {}

  /** Set once the API listens: with port 0 the real port is known only then. */
  advertise(address: string, rpcAddress = ""): void {
    this.address = address;
    this.rpcAddress = rpcAddress;
  }

  isLeader(): boolean {
    return true;
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
    return [
      { name: this.serverName, address: this.address, rpcAddress: this.rpcAddress, leader: true, self: true },
    ];
  }
}
