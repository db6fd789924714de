import { ApiError } from "../../api/api-error.ts";
import type { ApiContext } from "../../api/context.ts";

/** Nomad's aclDisabled: every ACL endpoint refuses to work on a cluster without ACLs. */
export function requireAclEnabled(ctx: ApiContext): void {
  if (!ctx.config.aclEnabled) throw ApiError.badRequest("ACL support disabled");
}
