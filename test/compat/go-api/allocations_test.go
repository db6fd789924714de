package goapi

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func TestAllocations(t *testing.T) {
	c := client(t)
	allocs := c.Allocations()
	const id = "go-alloc"
	readyNodes(t, c)
	ensureJob(t, c, webJob(id, 2, "v0"))
	deployed(t, c, id, 0)
	running := func(t *testing.T) []*api.AllocationListStub {
		t.Helper()
		list, _, err := allocs.List(&api.QueryOptions{Filter: `JobID == "` + id + `" and ClientStatus == "running" and DesiredStatus == "run"`})
		if err != nil {
			t.Fatalf("list running allocations of %s: %v", id, err)
		}
		if len(list) == 0 {
			t.Fatalf("no running allocation of %s", id)
		}
		return list
	}

	t.Run("list", func(t *testing.T) {
		list, qm, err := allocs.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(list) == 0 || qm.LastIndex == 0 {
			t.Fatalf("list: %d allocations, index %d", len(list), qm.LastIndex)
		}
		for _, a := range list {
			if a.ID == "" || a.EvalID == "" || a.Name == "" || a.NodeID == "" || a.NodeName == "" || a.JobID == "" ||
				a.TaskGroup == "" || a.DesiredStatus == "" || a.ClientStatus == "" || a.CreateIndex == 0 ||
				a.CreateTime == 0 || a.ModifyTime == 0 || a.Namespace == "" {
				t.Errorf("stub %+v: a field is empty", *a)
			}
		}
	})
	t.Run("list filters", func(t *testing.T) {
		mine := running(t)
		byPrefix, _, err := allocs.PrefixList(mine[0].ID[:8])
		if err != nil || len(byPrefix) != 1 || byPrefix[0].ID != mine[0].ID {
			t.Errorf("prefix: %d allocations, %v", len(byPrefix), err)
		}
		withResources, _, err := allocs.List(&api.QueryOptions{
			Filter: `JobID == "` + id + `"`,
			Params: map[string]string{"resources": "true", "task_states": "false"},
		})
		if err != nil {
			t.Fatalf("resources=true: %v", err)
		}
		for _, a := range withResources {
			if a.AllocatedResources == nil {
				t.Errorf("resources=true: %s has no AllocatedResources", a.ID)
			}
			if a.TaskStates != nil {
				t.Errorf("task_states=false: %s has TaskStates", a.ID)
			}
		}
	})
	t.Run("info", func(t *testing.T) {
		mine := running(t)
		a, _, err := allocs.Info(mine[0].ID, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		if a.Job == nil || *a.Job.ID != id || a.AllocatedResources == nil {
			t.Errorf("info: Job %v AllocatedResources %v", a.Job, a.AllocatedResources)
		}
		if a.TaskStates["server"] == nil || a.TaskStates["server"].State != "running" {
			t.Errorf("info: TaskStates %v", a.TaskStates)
		}
		if a.Resources == nil || a.Resources.CPU == nil || *a.Resources.CPU != 100 {
			t.Errorf("info: legacy Resources %+v, want CPU 100 (the CLI reads it)", a.Resources)
		}
		if a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil || !*a.DeploymentStatus.Healthy {
			t.Errorf("info: DeploymentStatus %+v, want healthy", a.DeploymentStatus)
		}
	})
	t.Run("stop", func(t *testing.T) {
		mine := running(t)
		a, _, err := allocs.Info(mine[0].ID, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		resp, err := allocs.Stop(a, nil)
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
		if resp.EvalID == "" || resp.LastIndex == 0 {
			t.Errorf("stop answer %+v", *resp)
		}
		eventually(t, "the stopped allocation complete", 20*time.Second, func() (bool, error) {
			a, _, err := allocs.Info(mine[0].ID, nil)
			return err == nil && a.DesiredStatus == "stop" && a.ClientStatus == "complete", err
		})
	})
}
