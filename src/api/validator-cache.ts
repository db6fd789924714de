import type { Ajv, ValidateFunction } from "ajv";

type AjvDataContext = Parameters<ValidateFunction>[1];
/**
 * What fastify passes beside the request part: its parent, through which Ajv
 * may replace the part itself. Ajv's generated function gives the fields left
 * out their defaults.
 */
type DataContext = Partial<NonNullable<AjvDataContext>>;

/** A route's validator as fastify uses it: `errors` is read right after a call that answered false. */
export interface RouteValidator {
  (data: unknown, dataCtx?: DataContext): boolean;
  errors?: ValidateFunction["errors"];
  /** Set so that fastify passes `dataCtx` (it does so for Ajv's own functions, which carry it). */
  readonly schemaEnv: true;
}

/**
 * Route validators of one Ajv instance, each schema compiled once and no
 * earlier than needed. Compiling every route's schemas was two fifths of a
 * server's start (about 600 ms of 1.7 s here): 445 schemas, of which 104
 * distinct, as the routes repeat the same query-string, path and body
 * schemas as separate objects and Ajv's own cache is keyed by the object.
 * Nomad's test harness allows a server ten seconds to come up, which a
 * loaded machine exceeded. So a route's validator compiles its schema at
 * its first call, or earlier when `warm` reaches it: `warm` runs after the
 * server is ready and compiles one schema per turn of the event loop, so
 * requests are answered between compiles.
 */
export class SchemaValidators {
  private readonly compiled = new Map<string, ValidateFunction>();
  /** Schemas no route has compiled yet, by their JSON text. */
  private readonly waiting = new Map<string, object>();

  constructor(private readonly ajv: Ajv) {}

  /** A validator for `schema`, shared in effect with every route whose schema has the same JSON text. */
  validator(schema: object): RouteValidator {
    // Symbol-keyed TypeBox markers are left out of the text, as Ajv ignores them too.
    const text = JSON.stringify(schema);
    if (!this.compiled.has(text)) this.waiting.set(text, schema);
    let validate: ValidateFunction | undefined;
    const route = (data: unknown, dataCtx?: DataContext): boolean => {
      validate ??= this.compile(text, schema);
      const valid = validate(data, dataCtx as AjvDataContext);
      route.errors = validate.errors;
      return valid;
    };
    route.errors = undefined as ValidateFunction["errors"];
    route.schemaEnv = true as const;
    return route;
  }

  /** How many distinct schemas are compiled. */
  get compiledCount(): number {
    return this.compiled.size;
  }

  /** How many distinct schemas are still to compile. */
  get pending(): number {
    return this.waiting.size;
  }

  /**
   * Compiles the schemas no request has needed yet, one per turn (a
   * setImmediate each), until none is left or `stopped()` says so. A schema
   * Ajv refuses is reported to `failed` and left to throw at its route's
   * first call, as it would have at the server's start.
   */
  warm(stopped: () => boolean, failed: (err: Error) => void): Promise<void> {
    return new Promise((resolve) => {
      const next = () => {
        const first = this.waiting.entries().next();
        if (first.done || stopped()) return resolve();
        const [text, schema] = first.value;
        try {
          this.compile(text, schema);
        } catch (err) {
          this.waiting.delete(text);
          failed(err as Error);
        }
        setImmediate(next);
      };
      setImmediate(next);
    });
  }

  private compile(text: string, schema: object): ValidateFunction {
    let validate = this.compiled.get(text);
    if (validate === undefined) {
      validate = this.ajv.compile(schema);
      this.compiled.set(text, validate);
      this.waiting.delete(text);
    }
    return validate;
  }
}
