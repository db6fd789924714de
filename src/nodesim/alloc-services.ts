import {
  type ServiceRegistrationBody,
  type SimNodeInfo,
  type SimServiceAlloc,
  workloadRegistrations,
} from "./service-specs.ts";

/**
 * The node's two service calls. Both resolve whatever the server answers
 * (a failed call is logged and dropped, as Nomad's client logs it): a
 * runner waits for them, it does not handle their errors.
 */
export interface ServiceCalls {
  /** ServiceRegistration.Upsert of one workload's registrations. */
  upsert(services: readonly ServiceRegistrationBody[]): Promise<void>;
  /** ServiceRegistration.DeleteByID; "service registration not found" counts as done. */
  deleteByID(namespace: string, id: string): Promise<void>;
}

/** What a runner's services need from its node. */
export interface NodeServices {
  readonly node: SimNodeInfo;
  readonly calls: ServiceCalls;
  /** A workload whose registrations cannot be built (an address that does not resolve). */
  failed(allocID: string, err: unknown): void;
}

/**
 * The service hooks of one allocation runner, for its native services:
 * the group service hook (registers in Prerun, before any task starts;
 * deregisters in PreKill or Postrun) and each task's service hook
 * (registers in Poststart, once the task runs; deregisters when it exits or
 * before it is killed). An update of the allocation registers its new set
 * (Nomad's UpdateWorkload: an upsert of what is wanted, a delete of each
 * registration no longer wanted). Calls go one after another, as the hooks
 * run in turn, so a delete never overtakes the upsert before it.
 */
export class AllocServices {
  /** What the group hook registered; undefined: nothing registered. */
  private group: readonly ServiceRegistrationBody[] | undefined;
  private readonly tasks = new Map<string, readonly ServiceRegistrationBody[]>();
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private alloc: SimServiceAlloc,
    private readonly host: NodeServices,
  ) {}

  /** Whether anything is registered (so a kill must wait for its deregistration). */
  get registered(): boolean {
    return this.group !== undefined || this.tasks.size > 0;
  }

  /** The group hook's Prerun. */
  registerGroup(): void {
    const wanted = this.build(undefined);
    if (!wanted || wanted.length === 0) return;
    this.group = wanted;
    this.queue(() => this.host.calls.upsert(wanted));
  }

  /** Each task's service hook at Poststart: its tasks just started. */
  registerTasks(): void {
    for (const task of this.alloc.Tasks) {
      if (task.Services.length === 0 || this.tasks.has(task.Name)) continue;
      const wanted = this.build(task.Name);
      if (!wanted || wanted.length === 0) continue;
      this.tasks.set(task.Name, wanted);
      this.queue(() => this.host.calls.upsert(wanted));
    }
  }

  /** The task hooks' Exited and PreKilling. */
  deregisterTasks(): void {
    for (const registrations of this.tasks.values()) this.remove(registrations);
    this.tasks.clear();
  }

  /** The group hook's PreKill and Postrun. */
  deregisterGroup(): void {
    if (!this.group) return;
    this.remove(this.group);
    this.group = undefined;
  }

  /** The hooks' Update: a registered workload registers its new set and removes what left it. */
  update(alloc: SimServiceAlloc): void {
    this.alloc = alloc;
    if (this.group) this.group = this.replace(this.group, undefined);
    for (const [task, old] of this.tasks) {
      const now = this.replace(old, task);
      if (now) this.tasks.set(task, now);
      else this.tasks.delete(task);
    }
  }

  /** Resolves once every call queued so far is answered. */
  settled(): Promise<void> {
    return this.chain;
  }

  private replace(
    old: readonly ServiceRegistrationBody[],
    task: string | undefined,
  ): readonly ServiceRegistrationBody[] | undefined {
    const wanted = this.build(task);
    // Nomad's UpdateWorkload returns the register error and leaves what was registered.
    if (!wanted) return old;
    if (wanted.length > 0) this.queue(() => this.host.calls.upsert(wanted));
    const kept = new Set(wanted.map((r) => r.ID));
    this.remove(old.filter((r) => !kept.has(r.ID)));
    return wanted.length > 0 ? wanted : undefined;
  }

  private remove(registrations: readonly ServiceRegistrationBody[]): void {
    if (registrations.length === 0) return;
    // Nomad's RemoveWorkload deletes the workload's services in parallel and waits for all.
    this.queue(() =>
      Promise.all(registrations.map((r) => this.host.calls.deleteByID(r.Namespace, r.ID))).then(
        () => undefined,
      ),
    );
  }

  private build(task: string | undefined): ServiceRegistrationBody[] | undefined {
    try {
      return workloadRegistrations(this.alloc, this.host.node, task);
    } catch (err) {
      this.host.failed(this.alloc.ID, err);
      return undefined;
    }
  }

  private queue(call: () => Promise<void>): void {
    // The calls log their own failures; one that throws anyway must not stop the ones after it.
    this.chain = this.chain.then(call).catch(() => undefined);
  }
}
