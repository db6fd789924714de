import type { ExpectedFailures } from "../expectations.ts";

/**
 * Go tests of this module known to fail today, by go test's full name
 * (subtests with spaces as underscores) → the missing feature. Each must
 * fail; one that passes fails test/compat/go-api.test.ts until it is removed
 * from here. The list only shrinks.
 */
export const EXPECTED_FAILURES: ExpectedFailures = {};
