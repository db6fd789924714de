"""python-nomad 2.1 (unmodified) against a Nomad-compatible server.

Runs every check below in order against NOMAD_ADDR, which must have at least
two ready client nodes in datacenter dc1 with the mock_driver (chronomad's
simulated nodes). Each check calls the library and verifies the shape of the
answer, not only its status. Prints one JSON line per check on stdout:

    {"name": "jobs.register", "ok": true}
    {"name": "jobs.scale", "ok": false, "error": "POST .../scale: 404 ..."}

and a readable line per check on stderr. Exits 0 when every check ran (the
caller judges the results against its list of expected failures), 2 when the
script itself could not run.

Where python-nomad 2.1 has no method for a call (job scale, evaluation
filters and counts, the scheduler configuration), the check goes through the
library's own Requester.request, which every method uses; where even that
cannot send the call (a DELETE with a body), through the library's
requests session. Each such check says so.
"""

import json
import os
import queue
import sys
import threading
import time
import traceback

import nomad
import nomad.api.exceptions as nexc

ADDR = os.environ.get("NOMAD_ADDR", "http://127.0.0.1:4646")
n = nomad.Nomad(address=ADDR, timeout=15)

UUID_LEN = 36
ZERO_TIME = "0001-01-01T00:00:00Z"

CHECKS = []


def check(name):
    def register(fn):
        CHECKS.append((name, fn))
        return fn

    return register


class CheckFailed(AssertionError):
    pass


def expect(cond, message):
    if not cond:
        raise CheckFailed(message)


def has_shape(obj, shape, what):
    """obj is a dict whose keys in `shape` have the given types (a tuple of types, or None for any)."""
    expect(isinstance(obj, dict), f"{what}: want an object, got {type(obj).__name__}: {short(obj)}")
    for key, types in shape.items():
        expect(key in obj, f"{what}: no {key} in {sorted(obj)}")
        if types is not None:
            expect(
                isinstance(obj[key], types) and not (isinstance(obj[key], bool) and bool not in _tuple(types)),
                f"{what}: {key} = {short(obj[key])}, want {types}",
            )


def _tuple(types):
    return types if isinstance(types, tuple) else (types,)


def is_uuid(v):
    return isinstance(v, str) and len(v) == UUID_LEN and v.count("-") == 4


def short(v, limit=300):
    s = json.dumps(v, default=str) if not isinstance(v, str) else v
    return s if len(s) <= limit else s[:limit] + "…"


def describe_error(err):
    resp = getattr(err, "nomad_resp", None)
    if resp is not None and hasattr(resp, "status_code"):
        return f"{type(err).__name__}: {resp.request.method} {resp.url}: {resp.status_code} {short(resp.text)}"
    if isinstance(err, CheckFailed):
        return str(err)
    return f"{type(err).__name__}: {err}"


def wait_until(what, fn, timeout=20.0):
    deadline = time.time() + timeout
    last = None
    while True:
        try:
            value = fn()
            if value:
                return value
        except Exception as err:  # noqa: BLE001 - keep polling; report the last error
            last = err
        if time.time() > deadline:
            raise CheckFailed(f"timed out after {timeout}s waiting for {what}" + (f" ({describe_error(last)})" if last else ""))
        time.sleep(0.2)


def raw(method, path, **kwargs):
    """A call python-nomad cannot make: through the library's requests session."""
    resp = n.jobs.session.request(method, f"{ADDR}{path}", timeout=15, **kwargs)
    return resp


def not_found(fn):
    try:
        fn()
    except nexc.URLNotFoundNomadException:
        return True
    return False


# ---- jobs used by the checks --------------------------------------------------------


def web_job(count=2, tag="v0", job_id="py-web"):
    return {
        "Job": {
            "ID": job_id,
            "Name": job_id,
            "Type": "service",
            "Datacenters": ["dc1"],
            "Update": {
                "MaxParallel": 2,
                "MinHealthyTime": 500_000_000,
                "HealthyDeadline": 60_000_000_000,
                "ProgressDeadline": 120_000_000_000,
            },
            "TaskGroups": [
                {
                    "Name": "web",
                    "Count": count,
                    # All at once: the simulated nodes report health only for
                    # allocations a deployment placed.
                    "Migrate": {"MaxParallel": 6},
                    "Scaling": {"Min": 1, "Max": 6, "Enabled": True},
                    "Tasks": [
                        {
                            "Name": "server",
                            "Driver": "mock_driver",
                            # A changed tag replaces every allocation.
                            "Env": {"TAG": tag},
                            "Resources": {"CPU": 100, "MemoryMB": 64},
                        }
                    ],
                }
            ],
        }
    }


def batch_job(job_id, parameterized=False):
    job = {
        "ID": job_id,
        "Name": job_id,
        "Type": "batch",
        "Datacenters": ["dc1"],
        "TaskGroups": [
            {
                "Name": "once",
                "Count": 1,
                "RestartPolicy": {"Attempts": 0, "Mode": "fail"},
                "ReschedulePolicy": {"Attempts": 0, "Unlimited": False},
                "Tasks": [
                    {
                        "Name": "work",
                        "Driver": "mock_driver",
                        "Config": {"run_for": "300ms", "exit_code": 0},
                        "Resources": {"CPU": 50, "MemoryMB": 32},
                    }
                ],
            }
        ],
    }
    if parameterized:
        job["ParameterizedJob"] = {"MetaOptional": ["who"]}
    return {"Job": job}


def ensure_job(job_id, body):
    if not_found(lambda: n.job.get_job(job_id)):
        n.job.register_job(job_id, body)


def deployment_successful(job_id, version=None):
    d = n.job.get_deployment(job_id)
    return d if d and d.get("Status") == "successful" and (version is None or d.get("JobVersion") == version) else None


def job_dead(job_id):
    return n.job.get_job(job_id).get("Status") == "dead"


def nodes():
    return sorted(n.nodes.get_nodes(), key=lambda x: x["Name"])


# ---- namespaces ---------------------------------------------------------------------

NS = "py-ns"


@check("namespaces.create")
def _():
    resp = n.namespace.create_namespace({"Name": NS, "Description": "python-nomad"})
    expect(resp.ok, f"create: {resp.status_code}")
    ns = n.namespace.get_namespace(NS)
    expect(ns.get("Description") == "python-nomad", f"created namespace: {short(ns)}")


def ensure_namespace():
    if not_found(lambda: n.namespace.get_namespace(NS)):
        resp = raw("PUT", f"/v1/namespace/{NS}", json={"Name": NS, "Description": "python-nomad"})
        expect(resp.ok, f"PUT /v1/namespace/{NS} (set-up): {resp.status_code} {resp.text}")


@check("namespaces.get")
def _():
    ensure_namespace()
    ns = n.namespace.get_namespace(NS)
    has_shape(ns, {"Name": str, "Description": str, "CreateIndex": int, "ModifyIndex": int}, "namespace")
    expect(ns["Name"] == NS, f"Name = {ns['Name']}")


@check("namespaces.update")
def _():
    ensure_namespace()
    resp = n.namespace.update_namespace(NS, {"Name": NS, "Description": "updated", "Meta": {"owner": "py"}})
    expect(resp.ok, f"update: {resp.status_code}")
    ns = n.namespace.get_namespace(NS)
    expect(ns.get("Description") == "updated", f"after update: {short(ns)}")
    expect((ns.get("Meta") or {}).get("owner") == "py", f"Meta after update: {short(ns.get('Meta'))}")


@check("namespaces.list")
def _():
    ensure_namespace()
    names = [x["Name"] for x in n.namespaces.get_namespaces()]
    expect("default" in names and NS in names, f"names = {names}")
    only = [x["Name"] for x in n.namespaces.get_namespaces(prefix="py-")]
    expect(only == [NS], f"prefix py-: {only}")


@check("namespaces.delete")
def _():
    ensure_namespace()
    resp = n.namespace.delete_namespace(NS)
    expect(resp.ok, f"delete: {resp.status_code}")
    expect(not_found(lambda: n.namespace.get_namespace(NS)), "namespace still there after delete")


# ---- nodes --------------------------------------------------------------------------


NODE_STUB = {
    "ID": str,
    "Name": str,
    "Datacenter": str,
    "NodeClass": str,
    "NodePool": str,
    "Drain": bool,
    "SchedulingEligibility": str,
    "Status": str,
    "Version": str,
    "Drivers": dict,
    "CreateIndex": int,
    "ModifyIndex": int,
}


@check("nodes.list")
def _():
    listed = nodes()
    expect(len(listed) >= 2, f"{len(listed)} nodes")
    for x in listed:
        has_shape(x, NODE_STUB, f"node stub {x.get('Name')}")
        expect(x["Status"] == "ready" and x["Datacenter"] == "dc1", f"node {x['Name']}: {x['Status']} {x['Datacenter']}")
        expect(x["NodePool"] == "default", f"node {x['Name']}: NodePool = {x['NodePool']!r}")


@check("nodes.list filters")
def _():
    node = nodes()[0]
    by_prefix = n.nodes.get_nodes(prefix=node["ID"][:8])
    expect([x["ID"] for x in by_prefix] == [node["ID"]], f"prefix: {[x['ID'] for x in by_prefix]}")
    by_filter = n.nodes.get_nodes(filter_=f'Name == "{node["Name"]}"')
    expect([x["ID"] for x in by_filter] == [node["ID"]], f"filter: {[x['ID'] for x in by_filter]}")
    with_res = n.nodes.get_nodes(resources=True)
    expect(all(isinstance(x.get("NodeResources"), dict) for x in with_res), "resources=true: no NodeResources")


@check("nodes.get")
def _():
    node = n.node.get_node(nodes()[0]["ID"])
    full = {k: v for k, v in NODE_STUB.items() if k != "Version"}  # only the stub has it
    has_shape(
        node,
        {
            **full,
            "Attributes": dict,
            "NodeResources": dict,
            "ReservedResources": dict,
            "Resources": dict,
            "Reserved": dict,
            "Meta": dict,
            "Events": list,
            "HTTPAddr": str,
            "StatusUpdatedAt": int,
        },
        "node",
    )
    expect(node.get("SecretID", "") == "", "node SecretID is not hidden")
    expect(node["Resources"].get("CPU", 0) > 0, f"legacy Resources: {short(node['Resources'])}")


@check("nodes.allocations")
def _():
    node_id = nodes()[0]["ID"]
    allocs = n.node.get_allocations(node_id)
    expect(isinstance(allocs, list), f"allocations: {short(allocs)}")
    expect(all(a.get("NodeID") == node_id for a in allocs), "an allocation of another node")
    # Nomad answers an empty list for a node it does not know.
    unknown = n.node.get_allocations("00000000-0000-0000-0000-000000000000")
    expect(unknown == [], f"allocations of an unknown node: {short(unknown)}")


@check("nodes.eligibility")
def _():
    node_id = nodes()[1]["ID"]
    out = n.node.eligible_node(node_id, ineligible=True)
    has_shape(out, {"NodeModifyIndex": int}, "eligibility answer")
    expect(n.node.get_node(node_id)["SchedulingEligibility"] == "ineligible", "not ineligible")
    n.node.eligible_node(node_id, eligible=True)
    expect(n.node.get_node(node_id)["SchedulingEligibility"] == "eligible", "not eligible again")


@check("nodes.evaluate")
def _():
    out = n.node.evaluate_node(nodes()[0]["ID"])
    # EvalIDs is null when no job has allocations on the node, as in Nomad.
    has_shape(out, {"EvalIDs": (list, type(None)), "EvalCreateIndex": int, "NodeModifyIndex": int}, "evaluate answer")


# ---- jobs ---------------------------------------------------------------------------


@check("jobs.parse")
def _():
    hcl = 'job "py-parsed" {\n  datacenters = ["dc1"]\n  group "g" {\n    task "t" {\n      driver = "mock_driver"\n    }\n  }\n}\n'
    job = n.jobs.parse(hcl)
    has_shape(job, {"ID": str, "TaskGroups": list}, "parsed job")
    expect(job["ID"] == "py-parsed" and job["TaskGroups"][0]["Tasks"][0]["Driver"] == "mock_driver", short(job))


@check("jobs.validate")
def _():
    resp = n.validate.validate_job(web_job())
    expect(resp.ok, f"validate: {resp.status_code} {resp.text}")
    out = resp.json()
    has_shape(out, {"DriverConfigValidated": bool, "ValidationErrors": (list, type(None)), "Error": str}, "validate answer")
    expect(not out["ValidationErrors"] and out["Error"] == "", f"a valid job: {short(out)}")


@check("jobs.register")
def _():
    out = n.job.register_job("py-web", web_job())
    has_shape(out, {"EvalID": str, "EvalCreateIndex": int, "JobModifyIndex": int, "Warnings": str}, "register answer")
    expect(is_uuid(out["EvalID"]), f"EvalID = {out['EvalID']}")
    wait_until("the first deployment of py-web successful", lambda: deployment_successful("py-web", 0), 40)


@check("jobs.get")
def _():
    ensure_job("py-web", web_job())
    job = n.job.get_job("py-web")
    has_shape(
        job,
        {
            "ID": str,
            "Namespace": str,
            "Type": str,
            "Status": str,
            "Version": int,
            "Stable": bool,
            "TaskGroups": list,
            "Update": dict,
            "NodePool": str,
            "SubmitTime": int,
            "JobModifyIndex": int,
        },
        "job",
    )
    expect(job["Namespace"] == "default" and job["NodePool"] == "default", f"{job['Namespace']} {job['NodePool']}")
    expect(job["TaskGroups"][0]["Count"] == 2, f"Count = {job['TaskGroups'][0]['Count']}")
    expect(job["Update"].get("ProgressDeadline") == 120_000_000_000, f"Update = {short(job['Update'])}")


@check("jobs.list")
def _():
    ensure_job("py-web", web_job())
    stubs = n.jobs.get_jobs(prefix="py-web")
    expect(len(stubs) == 1, f"prefix py-web: {[s.get('ID') for s in stubs]}")
    has_shape(
        stubs[0],
        {"ID": str, "Name": str, "Type": str, "Status": str, "Priority": int, "JobSummary": dict, "SubmitTime": int},
        "job stub",
    )
    filtered = n.jobs.get_jobs(filter_='Type == "service"')
    expect(all(s["Type"] == "service" for s in filtered) and filtered, "filter Type == service")


@check("jobs.summary")
def _():
    ensure_job("py-web", web_job())
    summary = wait_until(
        "py-web's two allocations running",
        lambda: (lambda s: s if s["Summary"]["web"]["Running"] == 2 else None)(n.job.get_summary("py-web")),
    )
    has_shape(summary, {"JobID": str, "Namespace": str, "Summary": dict, "Children": dict}, "summary")
    has_shape(summary["Summary"]["web"], {k: int for k in ("Queued", "Complete", "Failed", "Running", "Starting", "Lost")}, "group summary")


@check("jobs.plan")
def _():
    ensure_job("py-web", web_job())
    plan = n.job.plan_job("py-web", web_job(3, "v1"), diff=True)
    has_shape(plan, {"Annotations": dict, "JobModifyIndex": int, "Diff": dict, "CreatedEvals": (list, type(None))}, "plan")
    updates = plan["Annotations"]["DesiredTGUpdates"]["web"]
    # One new allocation; max_parallel 2 leaves room to replace one of the two others now.
    expect(
        (updates.get("Place"), updates.get("DestructiveUpdate"), updates.get("Ignore")) == (1, 1, 1),
        f"DesiredTGUpdates.web = {short(updates)}",
    )
    expect(not plan.get("FailedTGAllocs"), f"FailedTGAllocs = {short(plan.get('FailedTGAllocs'))}")


def field_diffs(diff):
    """Every field diff of a job diff, as (path, old, new)."""
    out = []

    def walk(obj, path):
        for f in obj.get("Fields") or []:
            out.append((path + [f["Name"]], f.get("Old"), f.get("New")))
        for o in obj.get("Objects") or []:
            walk(o, path + [o.get("Name", "")])
        for tg in obj.get("TaskGroups") or []:
            walk(tg, path + [tg.get("Name", "")])
        for t in obj.get("Tasks") or []:
            walk(t, path + [t.get("Name", "")])

    walk(diff, [])
    return out


@check("jobs.plan diff")
def _():
    ensure_job("py-web", web_job())
    plan = n.job.plan_job("py-web", web_job(3, "v1"), diff=True)
    diff = plan.get("Diff") or {}
    expect(diff.get("Type") == "Edited", f"Diff.Type = {diff.get('Type')}")
    fields = field_diffs(diff)
    expect((["web", "Count"], "2", "3") in fields, f"no Count 2 => 3 among {fields}")
    expect((["web", "server", "Env[TAG]"], "v0", "v1") in fields, f"no Env[TAG] v0 => v1 among {fields}")


@check("jobs.plan created evals")
def _():
    # No node has the docker driver: nothing fits, and Nomad's plan lists the
    # blocked evaluation that a register would create.
    job = web_job(1, "v0", job_id="py-infeasible")
    job["Job"]["TaskGroups"][0]["Tasks"][0]["Driver"] = "docker"
    plan = n.job.plan_job("py-infeasible", job, diff=True)
    expect("web" in (plan.get("FailedTGAllocs") or {}), f"FailedTGAllocs = {short(plan.get('FailedTGAllocs'))}")
    created = plan.get("CreatedEvals") or []
    expect(
        len(created) == 1 and created[0].get("Status") == "blocked" and created[0].get("JobID") == "py-infeasible",
        f"CreatedEvals = {short(created)}",
    )


@check("jobs.register new version")
def _():
    before = n.job.get_job("py-web")["JobModifyIndex"]
    out = n.job.register_job("py-web", web_job(3, "v1"))
    expect(out["JobModifyIndex"] > before, f"JobModifyIndex {out['JobModifyIndex']} <= {before}")
    wait_until("the deployment of py-web v1 successful", lambda: deployment_successful("py-web", 1), 40)


@check("jobs.versions")
def _():
    out = n.job.get_versions("py-web")
    has_shape(out, {"Versions": list}, "versions")
    versions = [v["Version"] for v in out["Versions"]]
    expect(versions[:2] == [1, 0], f"versions = {versions}")
    stable = [v["Stable"] for v in out["Versions"][:2]]
    expect(stable == [True, True], f"Stable of versions 1 and 0 = {stable} (both deployed successfully)")


@check("jobs.versions diffs")
def _():
    # python-nomad 2.1's get_versions has no diffs argument: its Requester.request.
    out = n.job.request("py-web", "versions", params={"diffs": "true"}, method="get").json()
    has_shape(out, {"Versions": list, "Diffs": list}, "versions with diffs")
    expect(len(out["Diffs"]) == len(out["Versions"]) - 1, f"{len(out['Diffs'])} diffs for {len(out['Versions'])} versions")
    fields = field_diffs(out["Diffs"][0])
    expect((["web", "Count"], "2", "3") in fields, f"no Count 2 => 3 among {fields}")


@check("jobs.scale")
def _():
    # python-nomad 2.1 has no scale method: its Requester.request.
    out = n.job.request(
        "py-web", "scale", json={"Count": 4, "Target": {"Group": "web"}, "Message": "python-nomad"}, method="post"
    ).json()
    has_shape(out, {"EvalID": str, "EvalCreateIndex": int, "JobModifyIndex": int}, "scale answer")
    status = n.job.request("py-web", "scale", method="get").json()
    has_shape(status, {"JobID": str, "JobStopped": bool, "TaskGroups": dict}, "scale status")
    expect(status["TaskGroups"]["web"]["Desired"] == 4, f"Desired = {short(status['TaskGroups']['web'])}")
    expect(n.job.get_job("py-web")["TaskGroups"][0]["Count"] == 4, "Count after scale")


@check("jobs.scaling policies")
def _():
    policies = n.scaling.get_scaling_policies(job="py-web")
    expect(isinstance(policies, list) and len(policies) == 1, f"policies = {short(policies)}")
    has_shape(policies[0], {"ID": str, "Enabled": bool, "Type": str, "Target": dict}, "policy stub")
    expect(policies[0]["Target"].get("Group") == "web", f"Target = {policies[0]['Target']}")
    policy = n.scaling.get_scaling_policy(policies[0]["ID"])
    has_shape(policy, {"ID": str, "Min": int, "Max": int, "Target": dict}, "policy")
    expect((policy["Min"], policy["Max"]) == (1, 6), f"Min/Max = {policy['Min']}/{policy['Max']}")


@check("jobs.revert")
def _():
    out = n.job.revert_job("py-web", 0)
    has_shape(out, {"EvalID": str, "JobModifyIndex": int}, "revert answer")
    job = n.job.get_job("py-web")
    task = job["TaskGroups"][0]["Tasks"][0]
    expect(job["TaskGroups"][0]["Count"] == 2 and task["Env"]["TAG"] == "v0", f"after revert: {short(job['TaskGroups'][0])}")
    expect(job["Version"] >= 2, f"Version = {job['Version']}")
    wait_until("the deployment of the reverted py-web successful", lambda: deployment_successful("py-web", job["Version"]), 40)


@check("jobs.stable")
def _():
    out = n.job.stable_job("py-web", 0, False)
    has_shape(out, {"Index": int}, "stable answer")
    versions = n.job.get_versions("py-web")["Versions"]
    expect([v["Stable"] for v in versions if v["Version"] == 0] == [False], "version 0 still stable")


@check("jobs.evaluate")
def _():
    out = n.job.evaluate_job("py-web")
    has_shape(out, {"EvalID": str, "EvalCreateIndex": int, "JobModifyIndex": int}, "evaluate answer")


@check("jobs.evaluations")
def _():
    evals = n.job.get_evaluations("py-web")
    expect(any(e["TriggeredBy"] == "job-register" for e in evals), f"{[e['TriggeredBy'] for e in evals]}")
    expect(all(e["JobID"] == "py-web" for e in evals), "an evaluation of another job")


@check("jobs.dispatch")
def _():
    n.job.register_job("py-dispatch", batch_job("py-dispatch", parameterized=True))
    out = n.job.dispatch_job("py-dispatch", meta={"who": "python"})
    has_shape(out, {"DispatchedJobID": str, "EvalID": str, "EvalCreateIndex": int, "JobCreateIndex": int}, "dispatch answer")
    expect(out["DispatchedJobID"].startswith("py-dispatch/dispatch-"), f"DispatchedJobID = {out['DispatchedJobID']}")
    child = n.job.get_job(out["DispatchedJobID"])
    expect(child["ParentID"] == "py-dispatch" and child["Meta"] == {"who": "python"}, f"child: {child['ParentID']} {child['Meta']}")


# ---- allocations --------------------------------------------------------------------

ALLOC_STUB = {
    "ID": str,
    "EvalID": str,
    "Name": str,
    "Namespace": str,
    "NodeID": str,
    "NodeName": str,
    "JobID": str,
    "JobVersion": int,
    "TaskGroup": str,
    "DesiredStatus": str,
    "ClientStatus": str,
    "CreateIndex": int,
    "ModifyIndex": int,
    "CreateTime": int,
    "ModifyTime": int,
}


def running_web_allocs():
    return [
        a
        for a in n.allocations.get_allocations(filter_='JobID == "py-web"')
        if a["ClientStatus"] == "running" and a["DesiredStatus"] == "run"
    ]


@check("allocations.list")
def _():
    allocs = n.allocations.get_allocations()
    expect(allocs, "no allocations")
    for a in allocs:
        has_shape(a, ALLOC_STUB, f"allocation stub {a.get('Name')}")
    by_prefix = n.allocations.get_allocations(prefix=allocs[0]["ID"][:8])
    expect([a["ID"] for a in by_prefix] == [allocs[0]["ID"]], "prefix")
    filtered = n.allocations.get_allocations(filter_='JobID == "py-web"')
    expect(filtered and all(a["JobID"] == "py-web" for a in filtered), "filter JobID == py-web")
    with_res = n.allocations.get_allocations(resources=True, task_states=False)
    expect(all(isinstance(a.get("AllocatedResources"), dict) for a in with_res), "resources=true: no AllocatedResources")


@check("allocations.get")
def _():
    allocs = wait_until("a running allocation of py-web", running_web_allocs)
    a = n.allocation.get_allocation(allocs[0]["ID"])
    full = {k: v for k, v in ALLOC_STUB.items() if k != "JobVersion"}  # only the stub has it
    has_shape(a, {**full, "Job": dict, "Resources": dict, "AllocatedResources": dict, "TaskStates": dict}, "allocation")
    expect(a["TaskStates"]["server"]["State"] == "running", f"TaskStates = {short(a['TaskStates'])}")
    expect(a["Resources"].get("CPU") == 100, f"legacy Resources = {short(a['Resources'])}")


@check("allocations.stop")
def _():
    allocs = wait_until("a running allocation of py-web", running_web_allocs)
    alloc_id = allocs[0]["ID"]
    out = n.allocation.stop_allocation(alloc_id)
    has_shape(out, {"EvalID": str, "Index": int}, "stop answer")
    wait_until(
        "the stopped allocation complete",
        lambda: (lambda a: a["DesiredStatus"] == "stop" and a["ClientStatus"] == "complete")(n.allocation.get_allocation(alloc_id)),
    )


# ---- deployments --------------------------------------------------------------------

GROUP_STATE = {"DesiredTotal": int, "PlacedAllocs": int, "HealthyAllocs": int, "UnhealthyAllocs": int, "ProgressDeadline": int}


@check("deployments.list")
def _():
    deployments = n.deployments.get_deployments()
    mine = [d for d in deployments if d["JobID"] == "py-web"]
    expect(len(mine) >= 2, f"{len(mine)} deployments of py-web")
    for d in mine:
        has_shape(d, {"ID": str, "JobID": str, "JobVersion": int, "Status": str, "StatusDescription": str, "TaskGroups": dict}, "deployment")
        has_shape(d["TaskGroups"]["web"], GROUP_STATE, "deployment group state")
    by_prefix = n.deployments.get_deployments(prefix=mine[0]["ID"][:8])
    expect([d["ID"] for d in by_prefix] == [mine[0]["ID"]], "prefix")


@check("deployments.get")
def _():
    first = [d for d in n.job.get_deployments("py-web") if d["JobVersion"] == 0][0]
    d = n.deployment.get_deployment(first["ID"])
    expect(d["Status"] == "successful", f"Status = {d['Status']}")
    web = d["TaskGroups"]["web"]
    expect(web["HealthyAllocs"] == web["DesiredTotal"] == 2, f"web = {short(web)}")


@check("deployments.progress deadline")
def _():
    d = [d for d in n.job.get_deployments("py-web") if d["JobVersion"] == 0][0]
    web = n.deployment.get_deployment(d["ID"])["TaskGroups"]["web"]
    expect(web["ProgressDeadline"] == 120_000_000_000, f"ProgressDeadline = {web['ProgressDeadline']}")
    expect(web.get("RequireProgressBy") not in (None, ZERO_TIME), f"RequireProgressBy = {web.get('RequireProgressBy')}")


@check("deployments.allocations")
def _():
    d = [d for d in n.job.get_deployments("py-web") if d["JobVersion"] == 0][0]
    allocs = n.deployment.get_deployment_allocations(d["ID"])
    expect(len(allocs) == 2 and all((a.get("DeploymentStatus") or {}).get("Healthy") for a in allocs), f"{short(allocs)}")


# ---- evaluations --------------------------------------------------------------------

EVAL_SHAPE = {
    "ID": str,
    "Namespace": str,
    "Priority": int,
    "Type": str,
    "TriggeredBy": str,
    "JobID": str,
    "Status": str,
    "CreateIndex": int,
    "ModifyIndex": int,
    "CreateTime": int,
    "ModifyTime": int,
}


@check("evaluations.list")
def _():
    evals = n.evaluations.get_evaluations()
    expect(len(evals) >= 3, f"{len(evals)} evaluations")
    for e in evals:
        has_shape(e, EVAL_SHAPE, f"evaluation {e.get('ID')}")
    by_prefix = n.evaluations.get_evaluations(prefix=evals[0]["ID"][:8])
    expect([e["ID"] for e in by_prefix] == [evals[0]["ID"]], "prefix")


@check("evaluations.get")
def _():
    e = n.evaluation.get_evaluation(n.job.get_evaluations("py-web")[0]["ID"])
    has_shape(e, EVAL_SHAPE, "evaluation")
    allocs = n.evaluation.get_allocations(e["ID"])
    expect(isinstance(allocs, list) and all(a["EvalID"] == e["ID"] for a in allocs), "allocations of the evaluation")


@check("evaluations.filter")
def _():
    # python-nomad 2.1's get_evaluations takes only a prefix: its Requester.request.
    evals = n.evaluations.request(method="get", params={"filter": 'JobID == "py-web"'}).json()
    expect(evals and all(e["JobID"] == "py-web" for e in evals), f"{[e['JobID'] for e in evals]}")


@check("evaluations.paginate")
def _():
    everything = [e["ID"] for e in n.evaluations.get_evaluations()]
    seen, token = [], None
    for _page in range(100):
        resp = n.evaluations.request(method="get", params={"per_page": 2, "next_token": token})
        page = resp.json()
        expect(len(page) <= 2, f"a page of {len(page)}")
        seen += [e["ID"] for e in page]
        token = resp.headers.get("X-Nomad-NextToken")
        if not token:
            break
    expect(len(everything) > 2, "too few evaluations to page")
    expect(sorted(seen) == sorted(everything), f"pages gave {len(seen)} evaluations, the list {len(everything)}")


@check("evaluations.count")
def _():
    out = n.evaluations.request("count", method="get").json()
    has_shape(out, {"Count": int}, "count answer")
    expect(out["Count"] == len(n.evaluations.get_evaluations()), f"Count = {out['Count']}")
    filtered = n.evaluations.request("count", method="get", params={"filter": 'JobID == "py-web"'}).json()
    expect(filtered["Count"] == len(n.job.get_evaluations("py-web")), f"filtered Count = {filtered['Count']}")


def scheduler_config():
    # python-nomad 2.1 has no scheduler configuration method: its Requester.request.
    return n.operator.request("scheduler", "configuration", method="get").json()


def set_pause(paused):
    config = scheduler_config()["SchedulerConfig"]
    config["PauseEvalBroker"] = paused
    out = n.operator.request("scheduler", "configuration", json=config, method="post").json()
    has_shape(out, {"Updated": bool, "Index": int}, "set scheduler configuration answer")
    expect(scheduler_config()["SchedulerConfig"]["PauseEvalBroker"] is paused, f"PauseEvalBroker not {paused}")


@check("evaluations.delete by filter")
def _():
    ensure_job("py-batch", batch_job("py-batch"))
    wait_until("py-batch dead", lambda: job_dead("py-batch"))
    expect(n.job.get_evaluations("py-batch"), "no evaluations of py-batch to delete")
    set_pause(True)
    try:
        # python-nomad sends no body with a DELETE: the library's session.
        resp = raw("DELETE", "/v1/evaluations", json={"Filter": 'JobID == "py-batch"'})
        expect(resp.ok, f"DELETE /v1/evaluations: {resp.status_code} {resp.text}")
        expect(n.job.get_evaluations("py-batch") == [], "evaluations of py-batch left")
    finally:
        set_pause(False)


# ---- search ---------------------------------------------------------------------------


@check("search.prefix")
def _():
    out = n.search.search("py-", "jobs")
    has_shape(out, {"Matches": dict, "Truncations": dict}, "search answer")
    expect("py-web" in out["Matches"]["jobs"], f"jobs matches = {out['Matches']['jobs']}")
    node_id = nodes()[0]["ID"]
    out = n.search.search(node_id[:6], "nodes")
    expect(node_id in out["Matches"]["nodes"], f"nodes matches = {out['Matches']['nodes']}")


@check("search.fuzzy")
def _():
    out = n.search.fuzzy_search("py-we", "jobs")
    has_shape(out, {"Matches": dict, "Truncations": dict}, "fuzzy answer")
    jobs = out["Matches"].get("jobs") or []
    expect({"ID": "py-web", "Scope": ["default", "py-web"]} in jobs, f"jobs matches = {jobs}")


# ---- blocking queries -----------------------------------------------------------------


@check("blocking.no change")
def _():
    # Namespaces: nothing changes them meanwhile (nodes change with their allocations).
    # python-nomad 2.1's get_namespaces takes no index: its Requester.request.
    resp = n.namespaces.request(method="get", params={})
    index = int(resp.headers["X-Nomad-Index"])
    expect(resp.headers.get("X-Nomad-KnownLeader") == "true", f"X-Nomad-KnownLeader = {resp.headers.get('X-Nomad-KnownLeader')}")
    expect("X-Nomad-LastContact" in resp.headers, "no X-Nomad-LastContact")
    again = n.namespaces.request(method="get", params={"index": index, "wait": "1s"})
    expect(int(again.headers["X-Nomad-Index"]) == index, f"index {again.headers['X-Nomad-Index']} after a wait with no change")


@check("blocking.wakes on change")
def _():
    node_id = nodes()[1]["ID"]
    resp = n.node.request(node_id, method="get")
    index = int(resp.headers["X-Nomad-Index"])
    result = {}

    def block():
        r = n.node.request(node_id, method="get", params={"index": index, "wait": "10s"}, timeout=20)
        result["index"] = int(r.headers["X-Nomad-Index"])
        result["eligibility"] = r.json()["SchedulingEligibility"]

    t = threading.Thread(target=block, daemon=True)
    t.start()
    time.sleep(0.5)
    n.node.eligible_node(node_id, ineligible=True)
    t.join(15)
    n.node.eligible_node(node_id, eligible=True)
    expect("index" in result, "the blocking query did not return")
    expect(result["index"] > index and result["eligibility"] == "ineligible", f"woke with {result} (index before {index})")


# ---- event stream ----------------------------------------------------------------------


def stream_events(topic, trigger, want, timeout=15.0):
    """Starts python-nomad's stream on `topic`, runs `trigger`, returns the first event `want` accepts."""
    index = int(n.jobs.request(method="get").headers["X-Nomad-Index"])
    thread, stop, events = n.event.stream.get_stream(index=index, topic=topic, timeout=30)
    thread.daemon = True
    thread.start()
    try:
        time.sleep(0.3)
        trigger()
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                msg = events.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                break
            has_shape(msg, {"Index": int, "Events": list}, "stream message")
            for ev in msg["Events"]:
                has_shape(ev, {"Topic": str, "Type": str, "Key": str, "Index": int, "Payload": dict}, "event")
                if want(ev):
                    return ev
        raise CheckFailed(f"no matching {topic} event within {timeout}s")
    finally:
        stop.set()


@check("events.job")
def _():
    ev = stream_events(
        "Job:py-events",
        lambda: n.job.register_job("py-events", batch_job("py-events")),
        lambda ev: ev["Topic"] == "Job" and ev["Key"] == "py-events",
    )
    expect(ev["Type"] == "JobRegistered" and ev["Namespace"] == "default", f"event {ev['Type']} {ev.get('Namespace')}")
    expect(ev["Payload"]["Job"]["ID"] == "py-events", "payload job")


@check("events.node")
def _():
    node_id = nodes()[1]["ID"]
    try:
        ev = stream_events(
            "Node",
            lambda: n.node.eligible_node(node_id, ineligible=True),
            lambda ev: ev["Topic"] == "Node" and ev["Key"] == node_id,
        )
    finally:
        n.node.eligible_node(node_id, eligible=True)
    expect(ev["Type"] == "NodeEligibility", f"Type = {ev['Type']}")
    expect(ev["Payload"]["Node"].get("SecretID") == "", "the node's SecretID is in the event")


# ---- GC -------------------------------------------------------------------------------


@check("gc.system gc")
def _():
    ensure_job("py-batch", batch_job("py-batch"))
    wait_until("py-batch dead", lambda: job_dead("py-batch"))
    expect(n.system.initiate_garbage_collection() is True, "gc answer not ok")
    wait_until("py-batch collected", lambda: not_found(lambda: n.job.get_job("py-batch")))


@check("gc.reconcile summaries")
def _():
    expect(n.system.reconcile_summaries() is True, "reconcile answer not ok")


# ---- regions, status, agent, operator, metrics ----------------------------------------------


@check("regions.list")
def _():
    expect(n.regions.get_regions() == ["global"], f"regions = {n.regions.get_regions()}")


@check("agent.self")
def _():
    out = n.agent.get_agent()
    has_shape(out, {"config": dict, "member": dict, "stats": dict}, "agent self")
    has_shape(out["config"], {"Region": str, "Datacenter": str, "NodeName": str}, "agent config")
    has_shape(out["member"], {"Name": str, "Addr": str, "Port": int, "Status": str, "Tags": dict}, "agent member")
    expect(out["config"]["Region"] == "global", f"Region = {out['config']['Region']}")


@check("agent.members")
def _():
    out = n.agent.get_members()
    has_shape(out, {"ServerName": str, "ServerRegion": str, "ServerDC": str, "Members": list}, "members")
    has_shape(out["Members"][0], {"Name": str, "Addr": str, "Port": int, "Status": str, "Tags": dict}, "member")
    expect(out["Members"][0]["Status"] == "alive", f"Status = {out['Members'][0]['Status']}")


@check("agent.status")
def _():
    leader = n.status.leader.get_leader()
    expect(isinstance(leader, str) and ":" in leader, f"leader = {leader}")
    peers = n.status.peers.get_peers()
    expect(leader in peers, f"peers = {peers}")


@check("agent.operator raft")
def _():
    out = n.operator.get_configuration()
    has_shape(out, {"Servers": list, "Index": int}, "raft configuration")
    has_shape(out["Servers"][0], {"ID": str, "Node": str, "Address": str, "Leader": bool, "Voter": bool}, "raft server")
    expect(any(s["Leader"] for s in out["Servers"]), "no leader among the servers")


@check("agent.metrics")
def _():
    out = n.metrics.get_metrics()
    has_shape(out, {"Timestamp": str, "Gauges": list, "Counters": list, "Samples": list}, "metrics")
    expect(any(g["Name"].startswith("nomad.") for g in out["Gauges"]), "no nomad.* gauge")


# ---- stopping jobs (last: earlier checks use py-web) -----------------------------------------


@check("jobs.deregister")
def _():
    ensure_job("py-web", web_job())
    out = n.job.deregister_job("py-web")
    has_shape(out, {"EvalID": str, "EvalCreateIndex": int, "JobModifyIndex": int}, "deregister answer")
    expect(n.job.get_job("py-web")["Stop"] is True, "job not stopped")


@check("jobs.deregister purge")
def _():
    ensure_job("py-web", web_job())
    n.job.deregister_job("py-web", purge=True)
    expect(not_found(lambda: n.job.get_job("py-web")), "job still there after purge")
    # Nomad answers 200 with no evaluation for a job it does not have.
    out = n.job.deregister_job("py-never-registered")
    expect(out.get("EvalID") == "", f"deregister of an unknown job: {short(out)}")


def main():
    only = set(sys.argv[1:])
    for name, fn in CHECKS:
        if only and name not in only and name.split(".")[0] not in only:
            continue
        started = time.time()
        try:
            fn()
            result = {"name": name, "ok": True}
        except Exception as err:  # noqa: BLE001 - every failure is a result
            result = {"name": name, "ok": False, "error": describe_error(err)}
            if os.environ.get("COMPAT_TRACEBACK"):
                traceback.print_exc()
        took = time.time() - started
        print(json.dumps(result), flush=True)
        mark = "ok  " if result["ok"] else "FAIL"
        print(f"{mark} {name} ({took:.1f}s){'' if result['ok'] else ': ' + result['error']}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # noqa: BLE001 - the script itself broke
        traceback.print_exc()
        sys.exit(2)
