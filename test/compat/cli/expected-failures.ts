import type { ExpectedFailures } from "../expectations.ts";

/**
 * Commands of nomad-cli.test.ts known to fail today: command → the missing
 * feature. Each must fail; one that passes fails the suite until it is
 * removed from here. The list only shrinks.
 */
export const EXPECTED_FAILURES: ExpectedFailures = {};
