import type { ExpectedFailures } from "../expectations.ts";

/**
 * Commands of nomad-cli-acl.test.ts known to fail today: case name → the
 * missing feature. Each must fail; one that passes fails the suite until it
 * is removed from here. The list only shrinks.
 */
export const ACL_EXPECTED_FAILURES: ExpectedFailures = {};
