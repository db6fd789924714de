package goapi

// Helpers of the area tests (namespaces_test.go, nodes_test.go, ...), which
// cover with the Go api client what test/compat/python-nomad covers with
// python-nomad. They need a server with at least two ready simulated nodes
// in dc1 running mock_driver (test/compat/go-api.test.ts starts one). Each
// area test makes its own jobs, so that one area's failure does not hide
// another's; within an area, subtests run in order and a subtest that needs
// what an earlier one made makes it when it is missing.

import (
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// webJob is a small service job: count allocations of one mock_driver task.
// A changed tag changes the task, so every allocation is replaced.
func webJob(id string, count int, tag string) *api.Job {
	return &api.Job{
		ID:          ptr(id),
		Name:        ptr(id),
		Type:        ptr("service"),
		Datacenters: []string{"dc1"},
		Update: &api.UpdateStrategy{
			MaxParallel:      ptr(2),
			MinHealthyTime:   ptr(500 * time.Millisecond),
			HealthyDeadline:  ptr(time.Minute),
			ProgressDeadline: ptr(2 * time.Minute),
		},
		TaskGroups: []*api.TaskGroup{{
			Name:  ptr("web"),
			Count: ptr(count),
			// All at once: the simulated nodes report health only for
			// allocations a deployment placed.
			Migrate: &api.MigrateStrategy{MaxParallel: ptr(6)},
			Scaling: &api.ScalingPolicy{Min: ptr(int64(1)), Max: ptr(int64(6)), Enabled: ptr(true)},
			Tasks: []*api.Task{{
				Name:      "server",
				Driver:    "mock_driver",
				Env:       map[string]string{"TAG": tag},
				Resources: &api.Resources{CPU: ptr(100), MemoryMB: ptr(64)},
			}},
		}},
	}
}

// batchJob finishes within a second on the simulated nodes.
func batchJob(id string, parameterized bool) *api.Job {
	job := &api.Job{
		ID:          ptr(id),
		Name:        ptr(id),
		Type:        ptr("batch"),
		Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{
			Name:             ptr("once"),
			Count:            ptr(1),
			RestartPolicy:    &api.RestartPolicy{Attempts: ptr(0), Mode: ptr("fail")},
			ReschedulePolicy: &api.ReschedulePolicy{Attempts: ptr(0), Unlimited: ptr(false)},
			Tasks: []*api.Task{{
				Name:      "work",
				Driver:    "mock_driver",
				Config:    map[string]any{"run_for": "300ms", "exit_code": 0},
				Resources: &api.Resources{CPU: ptr(50), MemoryMB: ptr(32)},
			}},
		}},
	}
	if parameterized {
		job.ParameterizedJob = &api.ParameterizedJobConfig{MetaOptional: []string{"who"}}
	}
	return job
}

// eventually polls check every 200 ms until it returns true; it fails the test naming what after timeout.
func eventually(t *testing.T, what string, timeout time.Duration, check func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := check()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ensureJob registers job unless a job with its ID exists.
func ensureJob(t *testing.T, c *api.Client, job *api.Job) {
	t.Helper()
	if _, _, err := c.Jobs().Info(*job.ID, nil); err == nil {
		return
	}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register %s (set-up): %v", *job.ID, err)
	}
}

// deployed waits until the job's latest deployment, of version (or any when negative), is successful.
func deployed(t *testing.T, c *api.Client, id string, version int) *api.Deployment {
	t.Helper()
	var d *api.Deployment
	eventually(t, fmt.Sprintf("a successful deployment of %s version %d", id, version), 40*time.Second,
		func() (bool, error) {
			var err error
			d, _, err = c.Jobs().LatestDeployment(id, nil)
			return err == nil && d != nil && d.Status == "successful" &&
				(version < 0 || d.JobVersion == uint64(version)), err
		})
	return d
}

// deadJob waits until the job is dead.
func deadJob(t *testing.T, c *api.Client, id string) {
	t.Helper()
	eventually(t, id+" dead", 20*time.Second, func() (bool, error) {
		job, _, err := c.Jobs().Info(id, nil)
		return err == nil && job.Status != nil && *job.Status == "dead", err
	})
}

// readyNodes are the ready nodes, by name.
func readyNodes(t *testing.T, c *api.Client) []*api.NodeListStub {
	t.Helper()
	nodes, _, err := c.Nodes().List(nil)
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	var ready []*api.NodeListStub
	for _, n := range nodes {
		if n.Status == "ready" {
			ready = append(ready, n)
		}
	}
	sort.Slice(ready, func(i, j int) bool { return ready[i].Name < ready[j].Name })
	if len(ready) < 2 {
		t.Fatalf("%d ready nodes, want at least 2 (simulated nodes)", len(ready))
	}
	return ready
}

// isNotFound: the client's error for a 404.
func isNotFound(err error) bool {
	var unexpected api.UnexpectedResponseError
	return errors.As(err, &unexpected) && unexpected.StatusCode() == 404
}

// fieldDiffs lists every field diff of a job diff as "path: old => new".
func fieldDiffs(d *api.JobDiff) []string {
	var out []string
	var objects func(path string, objs []*api.ObjectDiff)
	fields := func(path string, fs []*api.FieldDiff) {
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s%s: %s => %s", path, f.Name, f.Old, f.New))
		}
	}
	objects = func(path string, objs []*api.ObjectDiff) {
		for _, o := range objs {
			fields(path+o.Name+".", o.Fields)
			objects(path+o.Name+".", o.Objects)
		}
	}
	if d == nil {
		return nil
	}
	fields("", d.Fields)
	objects("", d.Objects)
	for _, tg := range d.TaskGroups {
		fields(tg.Name+".", tg.Fields)
		objects(tg.Name+".", tg.Objects)
		for _, task := range tg.Tasks {
			fields(tg.Name+"."+task.Name+".", task.Fields)
			objects(tg.Name+"."+task.Name+".", task.Objects)
		}
	}
	return out
}
