package goapi

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// TestJobs: one service job through its life, as python-nomad's checks take it.
func TestJobs(t *testing.T) {
	c := client(t)
	jobs := c.Jobs()
	const id = "go-web"
	readyNodes(t, c)

	t.Run("parse", func(t *testing.T) {
		hcl := "job \"go-parsed\" {\n  datacenters = [\"dc1\"]\n  group \"g\" {\n    task \"t\" {\n      driver = \"mock_driver\"\n    }\n  }\n}\n"
		job, err := jobs.ParseHCL(hcl, true)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		if job.ID == nil || *job.ID != "go-parsed" || len(job.TaskGroups) != 1 || job.TaskGroups[0].Tasks[0].Driver != "mock_driver" {
			t.Errorf("parsed job: %+v", job)
		}
		if job.Type == nil || *job.Type != "service" {
			t.Errorf("parsed with canonicalize: Type %v, want service", job.Type)
		}
	})
	t.Run("validate", func(t *testing.T) {
		resp, _, err := jobs.Validate(webJob(id, 2, "v0"), nil)
		if err != nil {
			t.Fatalf("validate: %v", err)
		}
		if len(resp.ValidationErrors) != 0 || resp.Error != "" {
			t.Errorf("validate of a valid job: %+v", *resp)
		}
	})
	t.Run("register", func(t *testing.T) {
		resp, wm, err := jobs.Register(webJob(id, 2, "v0"), nil)
		if err != nil {
			t.Fatalf("register: %v", err)
		}
		if len(resp.EvalID) != 36 || resp.EvalCreateIndex == 0 || resp.JobModifyIndex == 0 || wm.LastIndex == 0 {
			t.Errorf("register answer %+v, index %d", *resp, wm.LastIndex)
		}
		deployed(t, c, id, 0)
	})
	t.Run("info", func(t *testing.T) {
		ensureJob(t, c, webJob(id, 2, "v0"))
		job, _, err := jobs.Info(id, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		if *job.ID != id || *job.Namespace != "default" || *job.Type != "service" || *job.TaskGroups[0].Count != 2 {
			t.Errorf("info: %s %s %s count %d", *job.ID, *job.Namespace, *job.Type, *job.TaskGroups[0].Count)
		}
		if job.NodePool == nil || *job.NodePool != "default" {
			t.Errorf("info: NodePool %v, want default", job.NodePool)
		}
		if job.Update == nil || job.Update.ProgressDeadline == nil || *job.Update.ProgressDeadline != 2*time.Minute {
			t.Errorf("info: Update %+v, want ProgressDeadline 2m", job.Update)
		}
	})
	t.Run("list", func(t *testing.T) {
		ensureJob(t, c, webJob(id, 2, "v0"))
		stubs, _, err := jobs.PrefixList(id)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(stubs) != 1 || stubs[0].ID != id || stubs[0].JobSummary == nil || stubs[0].Type != "service" {
			t.Errorf("prefix %s: %d stubs", id, len(stubs))
		}
		filtered, _, err := jobs.List(&api.QueryOptions{Filter: `Type == "service"`})
		if err != nil || len(filtered) == 0 {
			t.Fatalf("filter: %d stubs, %v", len(filtered), err)
		}
		for _, s := range filtered {
			if s.Type != "service" {
				t.Errorf("filter Type == service: %s is %s", s.ID, s.Type)
			}
		}
	})
	t.Run("summary", func(t *testing.T) {
		ensureJob(t, c, webJob(id, 2, "v0"))
		eventually(t, "two allocations running", 20*time.Second, func() (bool, error) {
			s, _, err := jobs.Summary(id, nil)
			return err == nil && s.Summary["web"].Running == 2, err
		})
	})
	t.Run("plan", func(t *testing.T) {
		ensureJob(t, c, webJob(id, 2, "v0"))
		plan, _, err := jobs.Plan(webJob(id, 3, "v1"), true, nil)
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		u := plan.Annotations.DesiredTGUpdates["web"]
		// One new allocation; max_parallel 2 leaves room to replace one of the two others now.
		if u == nil || u.Place != 1 || u.DestructiveUpdate != 1 || u.Ignore != 1 {
			t.Errorf("plan: DesiredTGUpdates.web = %+v, want place 1, destructive 1, ignore 1", u)
		}
		if plan.JobModifyIndex == 0 || len(plan.FailedTGAllocs) != 0 {
			t.Errorf("plan: JobModifyIndex %d, FailedTGAllocs %v", plan.JobModifyIndex, plan.FailedTGAllocs)
		}
	})
	t.Run("plan diff", func(t *testing.T) {
		ensureJob(t, c, webJob(id, 2, "v0"))
		plan, _, err := jobs.Plan(webJob(id, 3, "v1"), true, nil)
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		if plan.Diff == nil || plan.Diff.Type != "Edited" {
			t.Fatalf("plan: Diff %s, want Edited", diffType(plan.Diff))
		}
		fields := fieldDiffs(plan.Diff)
		for _, want := range []string{"web.Count: 2 => 3", "web.server.Env[TAG]: v0 => v1"} {
			if !slices.Contains(fields, want) {
				t.Errorf("plan diff: no %q among %v", want, fields)
			}
		}
	})
	t.Run("plan created evals", func(t *testing.T) {
		// No node has the docker driver: nothing fits, and Nomad's plan lists
		// the blocked evaluation that a register would create.
		infeasible := webJob("go-infeasible", 1, "v0")
		infeasible.TaskGroups[0].Tasks[0].Driver = "docker"
		plan, _, err := jobs.Plan(infeasible, true, nil)
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		if plan.FailedTGAllocs["web"] == nil {
			t.Errorf("plan: FailedTGAllocs %v, want web", plan.FailedTGAllocs)
		}
		if len(plan.CreatedEvals) != 1 || plan.CreatedEvals[0].Status != "blocked" || plan.CreatedEvals[0].JobID != "go-infeasible" {
			t.Errorf("plan: CreatedEvals %+v, want one blocked evaluation of go-infeasible", plan.CreatedEvals)
		}
	})
	t.Run("register new version", func(t *testing.T) {
		ensureJob(t, c, webJob(id, 2, "v0"))
		before, _, err := jobs.Info(id, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		resp, _, err := jobs.Register(webJob(id, 3, "v1"), nil)
		if err != nil {
			t.Fatalf("register: %v", err)
		}
		if resp.JobModifyIndex <= *before.JobModifyIndex {
			t.Errorf("JobModifyIndex %d, not above %d", resp.JobModifyIndex, *before.JobModifyIndex)
		}
		deployed(t, c, id, 1)
	})
	t.Run("versions", func(t *testing.T) {
		versions, diffs, _, err := jobs.Versions(id, false, nil)
		if err != nil {
			t.Fatalf("versions: %v", err)
		}
		if len(versions) < 2 || *versions[0].Version != 1 || *versions[1].Version != 0 {
			t.Fatalf("versions: %d, want 1 then 0", len(versions))
		}
		if diffs != nil {
			t.Errorf("versions without diffs: %d diffs", len(diffs))
		}
		if !*versions[0].Stable || !*versions[1].Stable {
			t.Errorf("versions 1 and 0: Stable %v %v, want both (deployed successfully)", *versions[0].Stable, *versions[1].Stable)
		}
	})
	t.Run("versions diffs", func(t *testing.T) {
		versions, diffs, _, err := jobs.Versions(id, true, nil)
		if err != nil {
			t.Fatalf("versions: %v", err)
		}
		if len(diffs) != len(versions)-1 {
			t.Fatalf("%d diffs for %d versions", len(diffs), len(versions))
		}
		if fields := fieldDiffs(diffs[0]); !slices.Contains(fields, "web.Count: 2 => 3") {
			t.Errorf("diff of version 1: no Count 2 => 3 among %v", fields)
		}
	})
	t.Run("scale", func(t *testing.T) {
		resp, _, err := jobs.Scale(id, "web", ptr(4), "go api", false, nil, nil)
		if err != nil {
			t.Fatalf("scale: %v", err)
		}
		if resp.EvalID == "" || resp.JobModifyIndex == 0 {
			t.Errorf("scale answer %+v", *resp)
		}
		status, _, err := jobs.ScaleStatus(id, nil)
		if err != nil {
			t.Fatalf("scale status: %v", err)
		}
		if status.JobID != id || status.JobStopped || status.TaskGroups["web"].Desired != 4 {
			t.Errorf("scale status %+v", *status)
		}
	})
	t.Run("scaling policies", func(t *testing.T) {
		policies, _, err := c.Scaling().ListPolicies(&api.QueryOptions{Params: map[string]string{"job": id}})
		if err != nil {
			t.Fatalf("list policies: %v", err)
		}
		if len(policies) != 1 || policies[0].Target["Group"] != "web" || !policies[0].Enabled {
			t.Fatalf("policies of %s: %d", id, len(policies))
		}
		policy, _, err := c.Scaling().GetPolicy(policies[0].ID, nil)
		if err != nil {
			t.Fatalf("get policy: %v", err)
		}
		if policy.Min == nil || *policy.Min != 1 || policy.Max == nil || *policy.Max != 6 {
			t.Errorf("policy Min %v Max %v, want 1 and 6", policy.Min, policy.Max)
		}
	})
	t.Run("revert", func(t *testing.T) {
		resp, _, err := jobs.Revert(id, 0, nil, nil, "", "")
		if err != nil {
			t.Fatalf("revert: %v", err)
		}
		if resp.EvalID == "" || resp.JobModifyIndex == 0 {
			t.Errorf("revert answer %+v", *resp)
		}
		job, _, err := jobs.Info(id, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		if *job.TaskGroups[0].Count != 2 || job.TaskGroups[0].Tasks[0].Env["TAG"] != "v0" {
			t.Errorf("after revert: count %d, TAG %s; want version 0's", *job.TaskGroups[0].Count, job.TaskGroups[0].Tasks[0].Env["TAG"])
		}
		deployed(t, c, id, int(*job.Version))
	})
	t.Run("stable", func(t *testing.T) {
		if _, _, err := jobs.Stable(id, 0, false, nil); err != nil {
			t.Fatalf("stable: %v", err)
		}
		versions, _, _, err := jobs.Versions(id, false, nil)
		if err != nil {
			t.Fatalf("versions: %v", err)
		}
		for _, v := range versions {
			if *v.Version == 0 && *v.Stable {
				t.Errorf("version 0 still stable")
			}
		}
	})
	t.Run("evaluate", func(t *testing.T) {
		evalID, _, err := jobs.ForceEvaluate(id, nil)
		if err != nil || len(evalID) != 36 {
			t.Errorf("force evaluate: %q %v", evalID, err)
		}
	})
	t.Run("evaluations", func(t *testing.T) {
		evals, _, err := jobs.Evaluations(id, nil)
		if err != nil {
			t.Fatalf("evaluations: %v", err)
		}
		triggers := map[string]bool{}
		for _, e := range evals {
			triggers[e.TriggeredBy] = true
			if e.JobID != id {
				t.Errorf("evaluation %s of %s", e.ID, e.JobID)
			}
		}
		if !triggers["job-register"] {
			t.Errorf("evaluations triggered by %v, want job-register among them", triggers)
		}
	})
	t.Run("dispatch", func(t *testing.T) {
		ensureJob(t, c, batchJob("go-dispatch", true))
		resp, _, err := jobs.Dispatch("go-dispatch", map[string]string{"who": "go"}, nil, "", nil)
		if err != nil {
			t.Fatalf("dispatch: %v", err)
		}
		if !strings.HasPrefix(resp.DispatchedJobID, "go-dispatch/dispatch-") || resp.EvalID == "" {
			t.Fatalf("dispatch answer %+v", *resp)
		}
		child, _, err := jobs.Info(resp.DispatchedJobID, nil)
		if err != nil {
			t.Fatalf("info of the dispatched job: %v", err)
		}
		if *child.ParentID != "go-dispatch" || child.Meta["who"] != "go" {
			t.Errorf("dispatched job: ParentID %s Meta %v", *child.ParentID, child.Meta)
		}
	})
	t.Run("deregister", func(t *testing.T) {
		ensureJob(t, c, webJob(id, 2, "v0"))
		evalID, _, err := jobs.Deregister(id, false, nil)
		if err != nil || len(evalID) != 36 {
			t.Fatalf("deregister: %q %v", evalID, err)
		}
		job, _, err := jobs.Info(id, nil)
		if err != nil || !*job.Stop {
			t.Errorf("after deregister: %v, want Stop", err)
		}
	})
	t.Run("deregister purge", func(t *testing.T) {
		ensureJob(t, c, webJob(id, 2, "v0"))
		if _, _, err := jobs.DeregisterOpts(id, &api.DeregisterOptions{Purge: true}, nil); err != nil {
			t.Fatalf("deregister purge: %v", err)
		}
		if _, _, err := jobs.Info(id, nil); !isNotFound(err) {
			t.Errorf("info after purge: %v, want a 404", err)
		}
		// Nomad answers 200 without an evaluation for a job it does not have.
		evalID, _, err := jobs.Deregister("go-never-registered", false, nil)
		if err != nil || evalID != "" {
			t.Errorf("deregister of an unknown job: %q %v, want no evaluation and no error", evalID, err)
		}
	})
}
