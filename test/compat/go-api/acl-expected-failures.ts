import type { ExpectedFailures } from "../expectations.ts";

/**
 * ACL tests of this module (acl_test.go, acl_login_test.go) known to fail
 * today, by go test's full name → the missing feature. Each must fail; one
 * that passes fails test/compat/go-api-acl.test.ts until it is removed from
 * here. The list only shrinks.
 */
export const ACL_EXPECTED_FAILURES: ExpectedFailures = {
  "TestACLTokens/secret_shown_to_management":
    "deliberate (design.md rule 5): the server keeps only a hash of each SecretID, so a management token " +
    'reading or updating another token gets SecretID ""; the secret is shown when the token is created, ' +
    "and to its owner (token/self, its own GET, WhoAmI, a one-time token exchange)",
};
