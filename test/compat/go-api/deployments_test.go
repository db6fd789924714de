package goapi

import (
	"testing"
	"time"
)

func TestDeployments(t *testing.T) {
	c := client(t)
	deployments := c.Deployments()
	const id = "go-deploy"
	readyNodes(t, c)
	ensureJob(t, c, webJob(id, 2, "v0"))
	first := deployed(t, c, id, 0)

	t.Run("list", func(t *testing.T) {
		list, qm, err := deployments.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if qm.LastIndex == 0 {
			t.Errorf("list: X-Nomad-Index 0")
		}
		found := false
		for _, d := range list {
			if d.ID == first.ID {
				found = true
				if d.JobID != id || d.Status != "successful" || d.StatusDescription == "" || d.TaskGroups["web"] == nil {
					t.Errorf("deployment %+v", *d)
				}
			}
		}
		if !found {
			t.Errorf("list: %s missing", first.ID)
		}
		byPrefix, _, err := deployments.PrefixList(first.ID[:8])
		if err != nil || len(byPrefix) != 1 || byPrefix[0].ID != first.ID {
			t.Errorf("prefix: %d deployments, %v", len(byPrefix), err)
		}
	})
	t.Run("info", func(t *testing.T) {
		d, _, err := deployments.Info(first.ID, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		web := d.TaskGroups["web"]
		if d.Status != "successful" || web == nil || web.DesiredTotal != 2 || web.HealthyAllocs != 2 || web.PlacedAllocs != 2 {
			t.Errorf("info: %s %+v", d.Status, web)
		}
	})
	t.Run("progress deadline", func(t *testing.T) {
		d, _, err := deployments.Info(first.ID, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		web := d.TaskGroups["web"]
		if web.ProgressDeadline != 2*time.Minute || web.RequireProgressBy.IsZero() {
			t.Errorf("ProgressDeadline %s RequireProgressBy %s, want 2m and a time", web.ProgressDeadline, web.RequireProgressBy)
		}
	})
	t.Run("allocations", func(t *testing.T) {
		allocs, _, err := deployments.Allocations(first.ID, nil)
		if err != nil {
			t.Fatalf("allocations: %v", err)
		}
		if len(allocs) != 2 {
			t.Fatalf("allocations: %d, want 2", len(allocs))
		}
		for _, a := range allocs {
			if a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil || !*a.DeploymentStatus.Healthy {
				t.Errorf("allocation %s: DeploymentStatus %+v, want healthy", a.ID, a.DeploymentStatus)
			}
		}
	})
}
