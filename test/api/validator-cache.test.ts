import { Ajv } from "ajv";
import { describe, expect, it, vi } from "vitest";
import { SchemaValidators } from "../../src/api/validator-cache.ts";

const querySchema = () => ({
  type: "object",
  properties: { index: { type: "integer" }, prefix: { type: "string" } },
});

function counted(options: ConstructorParameters<typeof Ajv>[0] = {}) {
  const ajv = new Ajv(options);
  const compile = vi.spyOn(ajv, "compile");
  return { validators: new SchemaValidators(ajv), compile };
}

describe("route validators", () => {
  it("compile a schema at the first call, once for every route whose schema has the same text", () => {
    const { validators, compile } = counted({ coerceTypes: "array" });
    const a = validators.validator(querySchema());
    const b = validators.validator(querySchema());
    validators.validator({ type: "object", properties: { id: { type: "string" } } });
    expect(compile).not.toHaveBeenCalled();
    expect(validators.pending).toBe(2);

    const query: Record<string, unknown> = { index: "7" };
    expect(a(query)).toBe(true);
    expect(query.index).toBe(7);
    expect(b({ index: "seven" })).toBe(false);
    expect(b.errors?.[0]?.instancePath).toBe("/index");
    expect(compile).toHaveBeenCalledTimes(1);
    expect(validators.pending).toBe(1);
  });

  it("let Ajv replace the value itself through the parent fastify passes", () => {
    const { validators } = counted({ coerceTypes: "array" });
    const validate = validators.validator({ type: "integer" });
    // fastify passes the parent only to validators that carry schemaEnv, as Ajv's own do.
    expect(validate.schemaEnv).toBe(true);
    const request: Record<string, unknown> = { params: "12" };
    // Only these two, as fastify's validateParam passes them.
    expect(validate(request.params, { parentData: request, parentDataProperty: "params" })).toBe(true);
    expect(request.params).toBe(12);
  });

  it("warm the waiting schemas one per turn of the event loop, and stop when told", async () => {
    const { validators, compile } = counted();
    for (let i = 0; i < 5; i++)
      validators.validator({ type: "object", properties: { [`f${i}`]: { type: "string" } } });
    let calls = 0;
    await validators.warm(
      () => ++calls > 3,
      () => {},
    );
    expect(compile).toHaveBeenCalledTimes(3);
    expect(validators.pending).toBe(2);

    // Another turn's work sees the compiles happen one at a time.
    const seen: number[] = [];
    const probe = () => {
      seen.push(compile.mock.calls.length);
      if (seen.length < 10) setImmediate(probe);
    };
    setImmediate(probe);
    await validators.warm(
      () => false,
      () => {},
    );
    expect(compile).toHaveBeenCalledTimes(5);
    expect(validators.pending).toBe(0);
    expect(seen.slice(0, 2)).toEqual([3, 4]);
  });

  it("report a schema Ajv refuses while warming, and throw it at its route's first call", async () => {
    const { validators } = counted();
    const broken = validators.validator({ type: "object", properties: { a: { type: "no-such-type" } } });
    const failures: Error[] = [];
    await validators.warm(
      () => false,
      (err) => failures.push(err),
    );
    expect(failures).toHaveLength(1);
    expect(failures[0]!.message).toMatch(/no-such-type|type/);
    expect(validators.pending).toBe(0);
    expect(() => broken({ a: 1 })).toThrow();
  });
});
