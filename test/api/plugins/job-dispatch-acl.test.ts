import { afterEach, describe, expect, it } from "vitest";
import { type AclServer, startAclServer } from "../../acl/acl-fixtures.ts";
import { parameterizedJob, periodicJob } from "../../services/periodic-fixtures.ts";

const servers: AclServer[] = [];
afterEach(async () => {
  for (const a of servers.splice(0)) await a.s.stop();
});

describe("dispatch and periodic force under ACLs (Nomad: dispatch-job)", () => {
  it("needs dispatch-job in the job's namespace; submit-job alone is not enough", async () => {
    const a = await startAclServer();
    servers.push(a);
    await a.write("/v1/jobs", { Job: parameterizedJob("etl") });
    await a.write("/v1/jobs", { Job: periodicJob("report") });
    await a.policy("submit", 'namespace "default" { capabilities = ["submit-job", "read-job"] }');
    await a.policy("dispatch", 'namespace "default" { capabilities = ["dispatch-job"] }');
    const submitter = await a.token(["submit"]);
    const dispatcher = await a.token(["dispatch"]);
    const dispatch = { Meta: { customer: "a" } };

    for (const secret of [undefined, submitter.SecretID]) {
      expect((await a.call(secret, "/v1/job/etl/dispatch", "PUT", dispatch)).status).toBe(403);
      expect((await a.call(secret, "/v1/job/report/periodic/force", "PUT")).status).toBe(403);
    }
    const dispatched = await a.call(dispatcher.SecretID, "/v1/job/etl/dispatch", "PUT", dispatch);
    expect(dispatched.status, await dispatched.clone().text()).toBe(200);
    const forced = await a.call(dispatcher.SecretID, "/v1/job/report/periodic/force", "PUT");
    expect(forced.status, await forced.clone().text()).toBe(200);
  });
});
