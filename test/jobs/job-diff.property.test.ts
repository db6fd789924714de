import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { diffJobs, type FieldDiff, type JobDiff, type ObjectDiff } from "../../src/jobs/job-diff.ts";

/** Jobs as JSON, with the parts Nomad's diff looks into. */
const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,7}$/);
const text = fc.string({ maxLength: 8 });
const meta = fc.option(fc.dictionary(name, text, { maxKeys: 3 }), { nil: undefined });
const constraint = fc.record({ LTarget: text, RTarget: text, Operand: fc.constantFrom("=", "!=", "regexp") });
const configValue = fc.oneof(
  text,
  fc.integer({ min: -1e7, max: 1e7 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.array(text, { maxLength: 3 }),
);
const taskArb = fc.record({
  Name: name,
  Driver: fc.constantFrom("docker", "exec", "raw_exec"),
  Config: fc.dictionary(name, configValue, { maxKeys: 4 }),
  Env: meta,
  Meta: meta,
  KillTimeout: fc.nat(),
  Constraints: fc.array(constraint, { maxLength: 2 }),
  Resources: fc.record({ CPU: fc.nat(4000), MemoryMB: fc.nat(4096) }),
  Services: fc.array(fc.record({ Name: name, PortLabel: name, Tags: fc.array(text, { maxLength: 3 }) }), {
    maxLength: 2,
  }),
});
const groupArb = fc.record({
  Name: name,
  Count: fc.nat(10),
  Meta: meta,
  Constraints: fc.array(constraint, { maxLength: 2 }),
  RestartPolicy: fc.option(fc.record({ Attempts: fc.nat(5), Mode: fc.constantFrom("fail", "delay") }), {
    nil: undefined,
  }),
  ShutdownDelay: fc.option(fc.nat(), { nil: undefined }),
  Tasks: fc.uniqueArray(taskArb, { selector: (t) => t.Name, maxLength: 3 }),
});
const jobArb = fc.record({
  ID: fc.constant("job"),
  Name: name,
  Region: fc.constantFrom("global", "eu"),
  Type: fc.constantFrom("service", "batch", "system"),
  Priority: fc.integer({ min: 1, max: 100 }),
  AllAtOnce: fc.boolean(),
  Datacenters: fc.array(name, { minLength: 1, maxLength: 3 }),
  Meta: meta,
  Constraints: fc.array(constraint, { maxLength: 3 }),
  Periodic: fc.option(fc.record({ Enabled: fc.boolean(), Spec: text }), { nil: undefined }),
  TaskGroups: fc.uniqueArray(groupArb, { selector: (g) => g.Name, maxLength: 3 }),
});

/** Everything a diff lists, flattened: every field diff with where it sits. */
function allFields(d: JobDiff): FieldDiff[] {
  const out: FieldDiff[] = [];
  const objects = (os: ObjectDiff[] | null) => {
    for (const x of os ?? []) {
      out.push(...(x.Fields ?? []));
      objects(x.Objects);
    }
  };
  out.push(...(d.Fields ?? []));
  objects(d.Objects);
  for (const g of d.TaskGroups ?? []) {
    out.push(...(g.Fields ?? []));
    objects(g.Objects);
    for (const t of g.Tasks ?? []) {
      out.push(...(t.Fields ?? []));
      objects(t.Objects);
    }
  }
  return out;
}

const flip = (t: string) => (t === "Added" ? "Deleted" : t === "Deleted" ? "Added" : t);

describe("diffJobs properties", () => {
  it("a job diffed with itself (or a copy) is None and lists nothing, in either mode", () => {
    fc.assert(
      fc.property(jobArb, fc.boolean(), (job, contextual) => {
        const diff = diffJobs(job, structuredClone(job), contextual);
        expect(diff.Type).toBe("None");
        expect(diff.Fields).toBeNull();
        expect(diff.Objects).toBeNull();
        for (const g of diff.TaskGroups ?? []) {
          expect(g).toMatchObject({ Type: "None", Fields: null, Objects: null });
          for (const t of g.Tasks ?? [])
            expect(t).toMatchObject({ Type: "None", Fields: null, Objects: null });
        }
      }),
    );
  });

  it("a changed primitive field of the job is exactly that one field", () => {
    const change = fc.oneof(
      fc.record({ field: fc.constant("Name"), value: name }),
      fc.record({ field: fc.constant("Region"), value: fc.constantFrom("global", "eu", "us") }),
      fc.record({ field: fc.constant("Priority"), value: fc.integer({ min: 1, max: 100 }) }),
      fc.record({ field: fc.constant("AllAtOnce"), value: fc.boolean() }),
    );
    fc.assert(
      fc.property(jobArb, change, fc.boolean(), (job, { field, value }, contextual) => {
        const before = job as Record<string, unknown>;
        fc.pre(before[field] !== value);
        const diff = diffJobs(job, { ...job, [field]: value }, contextual);
        expect(diff.Type).toBe("Edited");
        expect(diff.Fields).toEqual([
          { Type: "Edited", Name: field, Old: String(before[field]), New: String(value), Annotations: null },
        ]);
        expect(diff.Objects).toBeNull();
        for (const g of diff.TaskGroups ?? []) expect(g.Type).toBe("None");
      }),
    );
  });

  it("a changed group count is exactly that group's Count field", () => {
    fc.assert(
      fc.property(
        jobArb.filter((j) => j.TaskGroups.length > 0),
        fc.nat(10),
        (job, count) => {
          const [first, ...rest] = job.TaskGroups;
          fc.pre(first!.Count !== count);
          const diff = diffJobs(job, { ...job, TaskGroups: [{ ...first!, Count: count }, ...rest] }, true);
          expect(diff.Type).toBe("Edited");
          expect(diff.Fields).toBeNull();
          for (const g of diff.TaskGroups ?? []) {
            if (g.Name !== first!.Name) {
              expect(g.Type).toBe("None");
              continue;
            }
            expect(g.Type).toBe("Edited");
            expect(g.Fields).toEqual([
              {
                Type: "Edited",
                Name: "Count",
                Old: String(first!.Count),
                New: String(count),
                Annotations: null,
              },
            ]);
            expect(g.Objects).toBeNull();
            for (const t of g.Tasks ?? []) expect(t.Type).toBe("None");
          }
        },
      ),
    );
  });

  it("swapping the two jobs swaps Added and Deleted, and Old and New, field for field", () => {
    fc.assert(
      fc.property(jobArb, jobArb, (a, b) => {
        const forward = diffJobs(a, b, false);
        const backward = diffJobs(b, a, false);
        expect(backward.Type).toBe(forward.Type);
        const key = (x: FieldDiff) => `${x.Name}\u0000${x.Old}\u0000${x.New}\u0000${x.Type}`;
        expect((backward.Fields ?? []).map(key).sort()).toEqual(
          (forward.Fields ?? [])
            .map((x) => key({ ...x, Type: flip(x.Type) as FieldDiff["Type"], Old: x.New, New: x.Old }))
            .sort(),
        );
        expect((backward.TaskGroups ?? []).map((g) => [g.Name, g.Type])).toEqual(
          (forward.TaskGroups ?? []).map((g) => [g.Name, flip(g.Type)]),
        );
      }),
    );
  });

  it("a new job is Added with only added fields; a removed one is its mirror image", () => {
    fc.assert(
      fc.property(jobArb, (job) => {
        const added = diffJobs(null, job, true);
        const deleted = diffJobs(job, null, true);
        expect(added.Type).toBe("Added");
        expect(deleted.Type).toBe("Deleted");
        for (const x of allFields(added)) {
          expect(["Added", "None"]).toContain(x.Type);
          expect(x.Old === "" || x.Type === "None").toBe(true);
        }
        expect(allFields(deleted).map((x) => [flip(x.Type), x.Name, x.New, x.Old])).toEqual(
          allFields(added).map((x) => [x.Type, x.Name, x.Old, x.New]),
        );
        for (const g of added.TaskGroups ?? []) expect(g.Type).toBe("Added");
      }),
    );
  });

  it("context only adds unchanged (None) fields: the changes and the types are the same without it", () => {
    fc.assert(
      fc.property(jobArb, jobArb, (a, b) => {
        const plain = diffJobs(a, b, false);
        const contextual = diffJobs(a, b, true);
        expect(contextual.Type).toBe(plain.Type);
        // As a multiset: the None fields count in the order Nomad gives objects of one name.
        const changes = (d: JobDiff) =>
          allFields(d)
            .filter((x) => x.Type !== "None")
            .map((x) => JSON.stringify(x))
            .sort();
        expect(changes(contextual)).toEqual(changes(plain));
        expect(allFields(plain).every((x) => x.Type !== "None")).toBe(true);
      }),
    );
  });

  it("lists the fields of each level sorted by name", () => {
    fc.assert(
      fc.property(jobArb, jobArb, (a, b) => {
        const diff = diffJobs(a, b, true);
        const sorted = (fs: FieldDiff[] | null) => {
          const names = (fs ?? []).map((x) => x.Name);
          expect(names).toEqual([...names].sort());
        };
        sorted(diff.Fields);
        for (const g of diff.TaskGroups ?? []) {
          sorted(g.Fields);
          for (const t of g.Tasks ?? []) sorted(t.Fields);
        }
        const groupNames = (diff.TaskGroups ?? []).map((g) => g.Name);
        expect(groupNames).toEqual([...groupNames].sort());
      }),
    );
  });
});
