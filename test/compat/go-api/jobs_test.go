// Package goapi checks chronomad against the Go API client of the newest
// Nomad release (github.com/hashicorp/nomad/api), which sends job fields
// Nomad 1.5 does not know. Nomad's HTTP decoders ignore unknown body fields,
// so the answers must be the ones Nomad 1.5 gives: unknown fields dropped,
// known ones canonicalized, a wrong type a 400 naming the field.
//
// The tests run against the server NOMAD_ADDR names (test/compat/go-api.test.ts
// starts one); without NOMAD_ADDR they are skipped.
package goapi

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func client(t *testing.T) *api.Client {
	t.Helper()
	if os.Getenv("NOMAD_ADDR") == "" {
		t.Skip("NOMAD_ADDR is not set: no server to test against")
	}
	c, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		t.Fatalf("api client: %v", err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }

// newerJob is a service job built with the api package's types, setting
// fields that Nomad 1.5 does not know beside the ones it does. It is sent as
// built (no client-side Canonicalize): the server fills in the defaults.
func newerJob(id string) *api.Job {
	return &api.Job{
		ID:          ptr(id),
		Datacenters: []string{"dc1"},
		Meta:        map[string]string{"team": "compat"},
		// Known since Nomad 1.6 (node pools, issue 26): a pool must exist,
		// and only the built-in "default" and "all" do here.
		NodePool: ptr("default"),
		UI: &api.JobUIConfig{
			Description: "a job from a newer client",
			Links:       []*api.JobUILink{{Label: "docs", URL: "https://example.com"}},
		},
		VersionTag: &api.JobVersionTag{Name: "v1", Description: "tagged by the client"},
		TaskGroups: []*api.TaskGroup{{
			Name:  ptr("web"),
			Count: ptr(2),
			// Consul is known to Nomad 1.5 (Namespace only); Cluster and
			// Partition are not.
			Consul: &api.Consul{Namespace: "team-ns", Cluster: "east", Partition: "part-1"},
			// Unknown to Nomad 1.5.
			Disconnect:              &api.DisconnectStrategy{LostAfter: ptr(time.Hour), Replace: ptr(false)},
			MaxRunDuration:          ptr(2 * time.Hour),
			PreventRescheduleOnLost: ptr(true),
			Tasks: []*api.Task{{
				Name:   "server",
				Driver: "docker",
				Config: map[string]any{"image": "nginx:1.25"},
				Resources: &api.Resources{
					CPU:      ptr(200),
					MemoryMB: ptr(128),
					// Unknown to Nomad 1.5.
					SecretsMB: ptr(16),
					NUMA:      &api.NUMAResource{Affinity: "prefer"},
				},
				// Identity is known to Nomad 1.5 (Env and File only).
				Identity: &api.WorkloadIdentity{
					Name: "default", Env: true, File: true,
					Audience: []string{"nomadproject.io"}, TTL: time.Hour,
				},
				// Unknown to Nomad 1.5.
				Consul:     &api.Consul{Cluster: "east"},
				Identities: []*api.WorkloadIdentity{{Name: "vault_default", Audience: []string{"vault.io"}}},
				Actions:    []*api.Action{{Name: "hello", Command: "/bin/echo", Args: []string{"hi"}}},
				Secrets:    []*api.Secret{{Name: "db", Provider: "nomad", Path: "secrets/db"}},
			}},
		}},
	}
}

const (
	second = time.Second
	minute = time.Minute
	hour   = time.Hour
)

func TestJobFromNewerClient(t *testing.T) {
	c := client(t)
	jobs := c.Jobs()
	id := fmt.Sprintf("goapi-web-%d", time.Now().UnixNano())
	t.Cleanup(func() { _, _, _ = jobs.Deregister(id, true, nil) })

	// Plan before the job exists: the whole job is added.
	plan, _, err := jobs.Plan(newerJob(id), true, nil)
	if err != nil {
		t.Fatalf("plan of a new job: %v", err)
	}
	if plan.JobModifyIndex != 0 {
		t.Errorf("plan of a new job: JobModifyIndex = %d, want 0", plan.JobModifyIndex)
	}
	checkPlan(t, "plan of a new job", plan, "Added", "Added", 2)

	// Register; PreserveResources is a request field Nomad 1.5 does not know.
	reg, wm, err := jobs.RegisterOpts(newerJob(id), &api.RegisterOptions{PreserveResources: true}, nil)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if reg.EvalID == "" || reg.EvalCreateIndex == 0 || reg.JobModifyIndex == 0 {
		t.Fatalf("register answer = %+v, want an evaluation and a JobModifyIndex", reg)
	}
	if reg.EvalCreateIndex != reg.JobModifyIndex {
		t.Errorf("register: EvalCreateIndex %d != JobModifyIndex %d (one raft entry in Nomad)",
			reg.EvalCreateIndex, reg.JobModifyIndex)
	}
	if wm.LastIndex != reg.JobModifyIndex {
		t.Errorf("register: X-Nomad-Index %d, want %d", wm.LastIndex, reg.JobModifyIndex)
	}

	// Read it back: Nomad 1.5's Job, canonicalized, without the fields it does not know.
	job, qm, err := jobs.Info(id, nil)
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	if qm.LastIndex == 0 {
		t.Errorf("info: X-Nomad-Index is 0")
	}
	checkJob(t, "info", job, id, reg.JobModifyIndex)

	// A register that changes only fields Nomad 1.5 does not know changes
	// nothing: no new version, only a new evaluation.
	again := newerJob(id)
	again.UI.Description = "changed"
	again.TaskGroups[0].Tasks[0].Actions = nil
	plan, _, err = jobs.Plan(again, true, nil)
	if err != nil {
		t.Fatalf("plan of an unknown-fields-only change: %v", err)
	}
	if plan.JobModifyIndex != reg.JobModifyIndex {
		t.Errorf("plan of an unchanged job: JobModifyIndex = %d, want %d", plan.JobModifyIndex, reg.JobModifyIndex)
	}
	if plan.Diff == nil || plan.Diff.Type != "None" {
		t.Errorf("plan of an unknown-fields-only change: Diff = %s, want Type None", diffType(plan.Diff))
	}
	reg2, _, err := jobs.Register(again, nil)
	if err != nil {
		t.Fatalf("register of an unknown-fields-only change: %v", err)
	}
	if reg2.JobModifyIndex != reg.JobModifyIndex {
		t.Errorf("register of an unknown-fields-only change: JobModifyIndex %d, want the unchanged %d",
			reg2.JobModifyIndex, reg.JobModifyIndex)
	}
	if reg2.EvalID == "" || reg2.EvalID == reg.EvalID || reg2.EvalCreateIndex <= reg.JobModifyIndex {
		t.Errorf("register of an unknown-fields-only change: want a new evaluation, got %+v", reg2)
	}

	// A change Nomad 1.5 knows is an edit.
	edited := newerJob(id)
	edited.TaskGroups[0].Count = ptr(3)
	plan, _, err = jobs.Plan(edited, true, nil)
	if err != nil {
		t.Fatalf("plan of an edit: %v", err)
	}
	if plan.JobModifyIndex != reg.JobModifyIndex {
		t.Errorf("plan of an edit: JobModifyIndex = %d, want %d", plan.JobModifyIndex, reg.JobModifyIndex)
	}
	checkPlan(t, "plan of an edit", plan, "Edited", "Edited", 3)

	// Versions: still one, the first.
	versions, diffs, _, err := jobs.Versions(id, false, nil)
	if err != nil {
		t.Fatalf("versions: %v", err)
	}
	if len(versions) != 1 {
		t.Fatalf("versions: %d, want 1 (an unknown-fields-only change is no new version)", len(versions))
	}
	if diffs != nil {
		t.Errorf("versions without ?diffs: Diffs = %v, want none", diffs)
	}
	checkJob(t, "versions[0]", versions[0], id, reg.JobModifyIndex)

	// List, with and without Meta.
	stubs, _, err := jobs.PrefixList(id)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	stub := findStub(t, stubs, id)
	if stub != nil {
		checkStub(t, stub, id, reg.JobModifyIndex)
		if stub.Meta != nil {
			t.Errorf("list without meta: Meta = %v, want none", stub.Meta)
		}
	}
	stubs, _, err = jobs.ListOptions(&api.JobListOptions{Fields: &api.JobListFields{Meta: true}},
		&api.QueryOptions{Prefix: id})
	if err != nil {
		t.Fatalf("list with meta: %v", err)
	}
	if stub := findStub(t, stubs, id); stub != nil && stub.Meta["team"] != "compat" {
		t.Errorf("list with meta: Meta = %v, want team=compat", stub.Meta)
	}

	// Evaluations: the two register evaluations, of this job, at the job's priority.
	evals, _, err := jobs.Evaluations(id, nil)
	if err != nil {
		t.Fatalf("evaluations: %v", err)
	}
	ids := map[string]bool{}
	for _, e := range evals {
		ids[e.ID] = true
		if e.JobID != id || e.Namespace != "default" || e.Type != "service" || e.Priority != 50 {
			t.Errorf("evaluation %s: JobID %q Namespace %q Type %q Priority %d, want %q default service 50",
				e.ID, e.JobID, e.Namespace, e.Type, e.Priority, id)
		}
	}
	for _, want := range []string{reg.EvalID, reg2.EvalID} {
		if !ids[want] {
			t.Errorf("evaluations: %s missing from %d evaluations", want, len(evals))
		}
	}
	for _, e := range evals {
		if e.ID == reg.EvalID && (e.TriggeredBy != "job-register" || e.JobModifyIndex != reg.JobModifyIndex) {
			t.Errorf("register evaluation: TriggeredBy %q JobModifyIndex %d, want job-register %d",
				e.TriggeredBy, e.JobModifyIndex, reg.JobModifyIndex)
		}
	}

	// Summary: the group, and (no node can run it) its two allocations
	// queued once the scheduler has looked at it.
	var summary *api.JobSummary
	deadline := time.Now().Add(15 * time.Second)
	for {
		summary, _, err = jobs.Summary(id, nil)
		if err != nil {
			t.Fatalf("summary: %v", err)
		}
		if tg, ok := summary.Summary["web"]; (ok && tg.Queued == 2) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if summary.JobID != id || summary.Namespace != "default" {
		t.Errorf("summary: JobID %q Namespace %q, want %q default", summary.JobID, summary.Namespace, id)
	}
	if got := summary.Summary["web"]; got != (api.TaskGroupSummary{Queued: 2}) {
		t.Errorf("summary of web: %+v, want 2 queued and nothing else", got)
	}
	if len(summary.Summary) != 1 {
		t.Errorf("summary: groups %v, want only web", summary.Summary)
	}
	if summary.Children == nil || *summary.Children != (api.JobChildrenSummary{}) {
		t.Errorf("summary: Children = %v, want all zero", summary.Children)
	}
}

func checkPlan(t *testing.T, what string, plan *api.JobPlanResponse, jobDiff, groupDiff string, place uint64) {
	t.Helper()
	if plan.Annotations == nil || plan.Annotations.DesiredTGUpdates["web"] == nil {
		t.Errorf("%s: no annotations for group web: %+v", what, plan.Annotations)
	} else if got := plan.Annotations.DesiredTGUpdates["web"].Place; got != place {
		t.Errorf("%s: web Place = %d, want %d", what, got, place)
	}
	// No node is registered: nothing fits.
	if plan.FailedTGAllocs["web"] == nil {
		t.Errorf("%s: FailedTGAllocs = %v, want web", what, plan.FailedTGAllocs)
	}
	// Nomad lists the blocked evaluation a failed placement would create;
	// whether one is there is TestJobs/plan_created_evals's concern.
	for _, e := range plan.CreatedEvals {
		if e.Status != "blocked" {
			t.Errorf("%s: created evaluation %s is %q, want blocked", what, e.ID, e.Status)
		}
	}
	if plan.Diff == nil {
		t.Errorf("%s: no diff", what)
		return
	}
	if plan.Diff.Type != jobDiff {
		t.Errorf("%s: Diff.Type = %q, want %q", what, plan.Diff.Type, jobDiff)
	}
	if len(plan.Diff.TaskGroups) != 1 || plan.Diff.TaskGroups[0].Name != "web" {
		t.Errorf("%s: Diff.TaskGroups = %v, want web", what, plan.Diff.TaskGroups)
		return
	}
	tg := plan.Diff.TaskGroups[0]
	if tg.Type != groupDiff {
		t.Errorf("%s: web diff Type = %q, want %q", what, tg.Type, groupDiff)
	}
	if tg.Updates["create"] != place {
		t.Errorf("%s: web diff Updates = %v, want create=%d", what, tg.Updates, place)
	}
}

func diffType(d *api.JobDiff) string {
	if d == nil {
		return "nil"
	}
	return d.Type
}

func checkJob(t *testing.T, what string, job *api.Job, id string, jobModifyIndex uint64) {
	t.Helper()
	errorf := func(format string, args ...any) { t.Errorf(what+": "+format, args...) }

	// Known fields, with the defaults Nomad 1.5 fills in.
	eqPtr(errorf, "ID", job.ID, id)
	eqPtr(errorf, "Name", job.Name, id)
	eqPtr(errorf, "Namespace", job.Namespace, "default")
	eqPtr(errorf, "Region", job.Region, "global")
	eqPtr(errorf, "Type", job.Type, "service")
	eqPtr(errorf, "Priority", job.Priority, 50)
	eqPtr(errorf, "AllAtOnce", job.AllAtOnce, false)
	eqPtr(errorf, "Stop", job.Stop, false)
	eqPtr(errorf, "ParentID", job.ParentID, "")
	eqPtr(errorf, "Status", job.Status, "pending")
	eqPtr(errorf, "Stable", job.Stable, false)
	eqPtr(errorf, "Version", job.Version, uint64(0))
	eqPtr(errorf, "JobModifyIndex", job.JobModifyIndex, jobModifyIndex)
	eqPtr(errorf, "CreateIndex", job.CreateIndex, jobModifyIndex)
	if job.SubmitTime == nil || *job.SubmitTime <= 0 {
		errorf("SubmitTime = %v, want a time", job.SubmitTime)
	}
	if !slices.Equal(job.Datacenters, []string{"dc1"}) {
		errorf("Datacenters = %v, want [dc1]", job.Datacenters)
	}
	if job.Meta["team"] != "compat" || len(job.Meta) != 1 {
		errorf("Meta = %v, want team=compat", job.Meta)
	}
	checkUpdate(errorf, "Update", job.Update)

	// Nomad 1.6's node pools (issue 26).
	eqPtr(errorf, "NodePool", job.NodePool, "default")

	// Unknown to Nomad 1.5: not there.
	if job.UI != nil {
		errorf("UI = %+v, want none (unknown to Nomad 1.5)", *job.UI)
	}
	if job.VersionTag != nil {
		errorf("VersionTag = %+v, want none (unknown to Nomad 1.5)", *job.VersionTag)
	}

	if len(job.TaskGroups) != 1 {
		errorf("TaskGroups = %d, want 1", len(job.TaskGroups))
		return
	}
	tg := job.TaskGroups[0]
	eqPtr(errorf, "group Name", tg.Name, "web")
	eqPtr(errorf, "group Count", tg.Count, 2)
	checkUpdate(errorf, "group Update", tg.Update)
	if rp := tg.RestartPolicy; rp == nil {
		errorf("group RestartPolicy missing")
	} else {
		eqPtr(errorf, "group RestartPolicy.Attempts", rp.Attempts, 2)
		eqPtr(errorf, "group RestartPolicy.Interval", rp.Interval, 30*minute)
		eqPtr(errorf, "group RestartPolicy.Delay", rp.Delay, 15*second)
		eqPtr(errorf, "group RestartPolicy.Mode", rp.Mode, "fail")
	}
	if rp := tg.ReschedulePolicy; rp == nil {
		errorf("group ReschedulePolicy missing")
	} else {
		eqPtr(errorf, "ReschedulePolicy.Attempts", rp.Attempts, 0)
		eqPtr(errorf, "ReschedulePolicy.Interval", rp.Interval, time.Duration(0))
		eqPtr(errorf, "ReschedulePolicy.Delay", rp.Delay, 30*second)
		eqPtr(errorf, "ReschedulePolicy.DelayFunction", rp.DelayFunction, "exponential")
		eqPtr(errorf, "ReschedulePolicy.MaxDelay", rp.MaxDelay, hour)
		eqPtr(errorf, "ReschedulePolicy.Unlimited", rp.Unlimited, true)
	}
	if m := tg.Migrate; m == nil {
		errorf("group Migrate missing")
	} else {
		eqPtr(errorf, "Migrate.MaxParallel", m.MaxParallel, 1)
		eqPtr(errorf, "Migrate.HealthCheck", m.HealthCheck, "checks")
		eqPtr(errorf, "Migrate.MinHealthyTime", m.MinHealthyTime, 10*second)
		eqPtr(errorf, "Migrate.HealthyDeadline", m.HealthyDeadline, 5*minute)
	}
	if d := tg.EphemeralDisk; d == nil {
		errorf("group EphemeralDisk missing")
	} else {
		eqPtr(errorf, "EphemeralDisk.SizeMB", d.SizeMB, 300)
		eqPtr(errorf, "EphemeralDisk.Sticky", d.Sticky, false)
		eqPtr(errorf, "EphemeralDisk.Migrate", d.Migrate, false)
	}
	if tg.Consul == nil || *tg.Consul != (api.Consul{Namespace: "team-ns"}) {
		errorf("group Consul = %+v, want only Namespace team-ns (Cluster and Partition are unknown to Nomad 1.5)",
			tg.Consul)
	}
	if tg.MaxRunDuration != nil {
		errorf("group MaxRunDuration = %v, want none (unknown to Nomad 1.5)", *tg.MaxRunDuration)
	}
	if tg.PreventRescheduleOnLost != nil {
		errorf("group PreventRescheduleOnLost = %v, want none (unknown to Nomad 1.5)", *tg.PreventRescheduleOnLost)
	}
	// Disconnect is Nomad 1.8's replacement for max_client_disconnect, unknown
	// to Nomad 1.5. chronomad knowingly keeps it: its LostAfter plays the role
	// of MaxClientDisconnect (streams/allocs.ts maxClientDisconnectMs), so it
	// must come back as sent.
	if d := tg.Disconnect; d == nil {
		errorf("group Disconnect missing (chronomad honours its LostAfter)")
	} else {
		eqPtr(errorf, "Disconnect.LostAfter", d.LostAfter, hour)
		eqPtr(errorf, "Disconnect.Replace", d.Replace, false)
	}

	if len(tg.Tasks) != 1 {
		errorf("Tasks = %d, want 1", len(tg.Tasks))
		return
	}
	task := tg.Tasks[0]
	if task.Name != "server" || task.Driver != "docker" || task.Config["image"] != "nginx:1.25" {
		errorf("task = %q %q %v, want server docker image=nginx:1.25", task.Name, task.Driver, task.Config)
	}
	if r := task.Resources; r == nil {
		errorf("task Resources missing")
	} else {
		eqPtr(errorf, "Resources.CPU", r.CPU, 200)
		eqPtr(errorf, "Resources.MemoryMB", r.MemoryMB, 128)
		eqPtr(errorf, "Resources.Cores", r.Cores, 0)
		eqPtr(errorf, "Resources.MemoryMaxMB", r.MemoryMaxMB, 0)
		if r.SecretsMB != nil {
			errorf("Resources.SecretsMB = %d, want none (unknown to Nomad 1.5)", *r.SecretsMB)
		}
		if r.NUMA != nil {
			errorf("Resources.NUMA = %+v, want none (unknown to Nomad 1.5)", *r.NUMA)
		}
	}
	eqPtr(errorf, "task KillTimeout", task.KillTimeout, 5*second)
	if lc := task.LogConfig; lc == nil {
		errorf("task LogConfig missing")
	} else {
		eqPtr(errorf, "LogConfig.MaxFiles", lc.MaxFiles, 10)
		eqPtr(errorf, "LogConfig.MaxFileSizeMB", lc.MaxFileSizeMB, 10)
	}
	if rp := task.RestartPolicy; rp == nil {
		errorf("task RestartPolicy missing (the group's is copied)")
	} else {
		eqPtr(errorf, "task RestartPolicy.Attempts", rp.Attempts, 2)
		eqPtr(errorf, "task RestartPolicy.Mode", rp.Mode, "fail")
	}
	if id := task.Identity; id == nil || !id.Env || !id.File {
		errorf("task Identity = %+v, want Env and File", id)
	} else if id.Name != "" || id.Audience != nil || id.TTL != 0 {
		errorf("task Identity = %+v, want only Env and File (the rest is unknown to Nomad 1.5)", *id)
	}
	if task.Consul != nil {
		errorf("task Consul = %+v, want none (unknown to Nomad 1.5)", *task.Consul)
	}
	if task.Identities != nil {
		errorf("task Identities = %v, want none (unknown to Nomad 1.5)", task.Identities)
	}
	if task.Actions != nil {
		errorf("task Actions = %v, want none (unknown to Nomad 1.5)", task.Actions)
	}
	if task.Secrets != nil {
		errorf("task Secrets = %v, want none (unknown to Nomad 1.5)", task.Secrets)
	}
	if task.Schedule != nil {
		errorf("task Schedule = %+v, want none (unknown to Nomad 1.5)", *task.Schedule)
	}
}

// checkUpdate: Nomad's DefaultUpdateStrategy, as a service job without an
// update block gets it.
func checkUpdate(errorf func(string, ...any), what string, u *api.UpdateStrategy) {
	if u == nil {
		errorf("%s missing", what)
		return
	}
	eqPtr(errorf, what+".Stagger", u.Stagger, 30*second)
	eqPtr(errorf, what+".MaxParallel", u.MaxParallel, 1)
	eqPtr(errorf, what+".HealthCheck", u.HealthCheck, "checks")
	eqPtr(errorf, what+".MinHealthyTime", u.MinHealthyTime, 10*second)
	eqPtr(errorf, what+".HealthyDeadline", u.HealthyDeadline, 5*minute)
	eqPtr(errorf, what+".ProgressDeadline", u.ProgressDeadline, 10*minute)
	eqPtr(errorf, what+".AutoRevert", u.AutoRevert, false)
	eqPtr(errorf, what+".AutoPromote", u.AutoPromote, false)
	eqPtr(errorf, what+".Canary", u.Canary, 0)
}

func eqPtr[T comparable](errorf func(string, ...any), field string, got *T, want T) {
	if got == nil {
		errorf("%s missing, want %v", field, want)
	} else if *got != want {
		errorf("%s = %v, want %v", field, *got, want)
	}
}

func findStub(t *testing.T, stubs []*api.JobListStub, id string) *api.JobListStub {
	t.Helper()
	for _, s := range stubs {
		if s.ID == id {
			return s
		}
	}
	t.Errorf("list: %s not among %d jobs", id, len(stubs))
	return nil
}

func checkStub(t *testing.T, s *api.JobListStub, id string, jobModifyIndex uint64) {
	t.Helper()
	if s.Name != id || s.ParentID != "" || s.Namespace != "default" || s.Type != "service" || s.Priority != 50 {
		t.Errorf("list: stub %+v, want Name %s, namespace default, service, priority 50", *s, id)
	}
	if !slices.Equal(s.Datacenters, []string{"dc1"}) || s.Periodic || s.ParameterizedJob || s.Stop {
		t.Errorf("list: stub %+v, want dc1, not periodic, parameterized or stopped", *s)
	}
	if s.Status != "pending" || s.JobModifyIndex != jobModifyIndex || s.CreateIndex != jobModifyIndex || s.SubmitTime <= 0 {
		t.Errorf("list: stub %+v, want pending, JobModifyIndex = CreateIndex = %d, a SubmitTime", *s, jobModifyIndex)
	}
	if s.JobSummary == nil || s.JobSummary.JobID != id {
		t.Errorf("list: stub JobSummary = %+v, want the job's", s.JobSummary)
	} else if _, ok := s.JobSummary.Summary["web"]; !ok {
		t.Errorf("list: stub JobSummary.Summary = %v, want web", s.JobSummary.Summary)
	}
}

// A wrong type is a 400 that names the field, as Go's decoder makes it in
// Nomad; sent raw, since the api types cannot carry one.
func TestWrongTypeIsBadRequest(t *testing.T) {
	c := client(t)
	register, plan := "/v1/jobs", "/v1/job/goapi-bad/plan"
	cases := []struct {
		name, body, field string
		paths             []string
	}{
		{"job priority", `{"Job":{"ID":"goapi-bad","Priority":"high","TaskGroups":[]}}`, "Priority",
			[]string{register, plan}},
		{"group count", `{"Job":{"ID":"goapi-bad","TaskGroups":[{"Name":"web","Count":"two"}]}}`, "Count",
			[]string{register, plan}},
		{"register field", `{"Job":{"ID":"goapi-bad"},"EvalPriority":"high"}`, "EvalPriority",
			[]string{register}},
		{"plan field", `{"Job":{"ID":"goapi-bad"},"Diff":"yes"}`, "Diff", []string{plan}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range tc.paths {
				var out map[string]any
				_, err := c.Raw().Write(path, strings.NewReader(tc.body), &out, nil)
				var unexpected api.UnexpectedResponseError
				switch {
				case err == nil:
					t.Errorf("PUT %s %s: accepted, want a 400 naming %s", path, tc.body, tc.field)
				case !errors.As(err, &unexpected) || unexpected.StatusCode() != 400:
					t.Errorf("PUT %s %s: %v, want a 400 naming %s", path, tc.body, err, tc.field)
				case !strings.Contains(unexpected.Body(), tc.field):
					t.Errorf("PUT %s %s: 400 %q does not name %s", path, tc.body, unexpected.Body(), tc.field)
				}
			}
		})
	}
	if _, _, err := c.Jobs().Info("goapi-bad", nil); err == nil {
		t.Errorf("a refused job was registered")
	}
}

// The same job as `nomad job run` of the newest release sends it: after the
// client's Canonicalize, which fills in newer defaults too (NodePool "",
// Disconnect.Reconcile, LogConfig.Disabled, ...).
func TestJobCanonicalizedByNewerClient(t *testing.T) {
	c := client(t)
	jobs := c.Jobs()
	id := fmt.Sprintf("goapi-canon-%d", time.Now().UnixNano())
	t.Cleanup(func() { _, _, _ = jobs.Deregister(id, true, nil) })
	canonical := func() *api.Job {
		j := newerJob(id)
		j.Canonicalize()
		return j
	}
	reg, _, err := jobs.Register(canonical(), nil)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	job, _, err := jobs.Info(id, nil)
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	checkJob(t, "info", job, id, reg.JobModifyIndex)

	// Registering what was read back (as `nomad job inspect | nomad job run -json` does) changes nothing.
	plan, _, err := jobs.Plan(job, true, nil)
	if err != nil {
		t.Fatalf("plan of the job as read: %v", err)
	}
	if plan.Diff == nil || plan.Diff.Type != "None" {
		t.Errorf("plan of the job as read: Diff = %s, want Type None", diffType(plan.Diff))
	}
	again, _, err := jobs.Register(canonical(), nil)
	if err != nil {
		t.Fatalf("register again: %v", err)
	}
	if again.JobModifyIndex != reg.JobModifyIndex {
		t.Errorf("register again: JobModifyIndex %d, want the unchanged %d", again.JobModifyIndex, reg.JobModifyIndex)
	}
}
