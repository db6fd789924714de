package goapi

import (
	"slices"
	"testing"

	"github.com/hashicorp/nomad/api"
)

func TestEvaluations(t *testing.T) {
	c := client(t)
	evals := c.Evaluations()
	const id = "go-batch"
	readyNodes(t, c)
	ensureJob(t, c, batchJob(id, false))
	deadJob(t, c, id)

	t.Run("list", func(t *testing.T) {
		list, qm, err := evals.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(list) == 0 || qm.LastIndex == 0 {
			t.Fatalf("list: %d evaluations, index %d", len(list), qm.LastIndex)
		}
		for _, e := range list {
			if e.ID == "" || e.Namespace == "" || e.Priority == 0 || e.Type == "" || e.TriggeredBy == "" ||
				e.Status == "" || e.CreateIndex == 0 || e.CreateTime == 0 || e.ModifyTime == 0 {
				t.Errorf("evaluation %+v: a field is empty", *e)
			}
		}
		byPrefix, _, err := evals.PrefixList(list[0].ID[:8])
		if err != nil || len(byPrefix) != 1 || byPrefix[0].ID != list[0].ID {
			t.Errorf("prefix: %d evaluations, %v", len(byPrefix), err)
		}
	})
	t.Run("info", func(t *testing.T) {
		mine, _, err := c.Jobs().Evaluations(id, nil)
		if err != nil || len(mine) == 0 {
			t.Fatalf("evaluations of %s: %d, %v", id, len(mine), err)
		}
		e, _, err := evals.Info(mine[0].ID, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		if e.ID != mine[0].ID || e.JobID != id || e.Status != "complete" {
			t.Errorf("info: %s %s %s", e.ID, e.JobID, e.Status)
		}
		allocs, _, err := evals.Allocations(e.ID, nil)
		if err != nil {
			t.Fatalf("allocations: %v", err)
		}
		for _, a := range allocs {
			if a.EvalID != e.ID {
				t.Errorf("allocation %s of evaluation %s", a.ID, a.EvalID)
			}
		}
	})
	t.Run("filter", func(t *testing.T) {
		list, _, err := evals.List(&api.QueryOptions{Filter: `JobID == "` + id + `"`})
		if err != nil || len(list) == 0 {
			t.Fatalf("filter: %d, %v", len(list), err)
		}
		for _, e := range list {
			if e.JobID != id {
				t.Errorf("filter JobID == %s: %s", id, e.JobID)
			}
		}
	})
	t.Run("paginate", func(t *testing.T) {
		all, _, err := evals.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(all) <= 2 {
			t.Fatalf("%d evaluations, too few to page", len(all))
		}
		var seen []string
		token := ""
		for page := 0; page < 100; page++ {
			list, qm, err := evals.List(&api.QueryOptions{PerPage: 2, NextToken: token})
			if err != nil {
				t.Fatalf("page %d: %v", page, err)
			}
			if len(list) > 2 {
				t.Fatalf("page %d: %d evaluations", page, len(list))
			}
			for _, e := range list {
				seen = append(seen, e.ID)
			}
			if token = qm.NextToken; token == "" {
				break
			}
		}
		var want []string
		for _, e := range all {
			want = append(want, e.ID)
		}
		slices.Sort(seen)
		slices.Sort(want)
		if !slices.Equal(seen, want) {
			t.Errorf("pages gave %d evaluations, the list %d", len(seen), len(want))
		}
	})
	t.Run("count", func(t *testing.T) {
		all, _, err := evals.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		count, _, err := evals.Count(nil)
		if err != nil {
			t.Fatalf("count: %v", err)
		}
		if count.Count != len(all) {
			t.Errorf("count %d, list %d", count.Count, len(all))
		}
		mine, _, _ := c.Jobs().Evaluations(id, nil)
		filtered, _, err := evals.Count(&api.QueryOptions{Filter: `JobID == "` + id + `"`})
		if err != nil || filtered.Count != len(mine) {
			t.Errorf("filtered count %v (%v), want %d", filtered, err, len(mine))
		}
	})
	t.Run("delete by filter", func(t *testing.T) {
		op := c.Operator()
		setPause := func(paused bool) {
			t.Helper()
			conf, _, err := op.SchedulerGetConfiguration(nil)
			if err != nil {
				t.Fatalf("scheduler configuration: %v", err)
			}
			conf.SchedulerConfig.PauseEvalBroker = paused
			resp, _, err := op.SchedulerSetConfiguration(conf.SchedulerConfig, nil)
			if err != nil || !resp.Updated {
				t.Fatalf("pause eval broker %v: %+v %v", paused, resp, err)
			}
		}
		setPause(true)
		defer setPause(false)
		resp, _, err := evals.DeleteOpts(&api.EvalDeleteRequest{Filter: `JobID == "` + id + `"`}, nil)
		if err != nil {
			t.Fatalf("delete: %v", err)
		}
		if resp.Count == 0 {
			t.Errorf("delete: Count 0")
		}
		if left, _, _ := c.Jobs().Evaluations(id, nil); len(left) != 0 {
			t.Errorf("%d evaluations of %s left", len(left), id)
		}
	})
}
