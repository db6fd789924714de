import type { ExpectedFailures } from "../expectations.ts";

/**
 * Checks of compat_check.py known to fail today: check → the missing
 * feature. Each must fail; one that passes fails the suite until it is
 * removed from here. The list only shrinks.
 */
export const EXPECTED_FAILURES: ExpectedFailures = {};
