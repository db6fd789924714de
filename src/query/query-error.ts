/** A problem with a request's query parameters; the HTTP layer answers 400 with `message` as the body. */
export class QueryError extends Error {
  override readonly name = "QueryError";
  readonly status = 400;
}
