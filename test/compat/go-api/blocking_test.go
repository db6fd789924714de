package goapi

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func TestBlocking(t *testing.T) {
	c := client(t)
	nodes := c.Nodes()
	node := readyNodes(t, c)[1]

	t.Run("no change", func(t *testing.T) {
		// Namespaces: nothing changes them meanwhile (nodes change with their allocations).
		_, qm, err := c.Namespaces().List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if !qm.KnownLeader {
			t.Errorf("X-Nomad-KnownLeader is not true")
		}
		_, again, err := c.Namespaces().List(&api.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: time.Second})
		if err != nil {
			t.Fatalf("blocking list: %v", err)
		}
		if again.LastIndex != qm.LastIndex {
			t.Errorf("index %d after a wait with no change, want %d", again.LastIndex, qm.LastIndex)
		}
	})
	t.Run("wakes on change", func(t *testing.T) {
		_, qm, err := nodes.Info(node.ID, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		type result struct {
			node *api.Node
			meta *api.QueryMeta
			err  error
		}
		done := make(chan result, 1)
		go func() {
			n, meta, err := nodes.Info(node.ID, &api.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: 10 * time.Second})
			done <- result{n, meta, err}
		}()
		time.Sleep(500 * time.Millisecond)
		if _, err := nodes.ToggleEligibility(node.ID, false, nil); err != nil {
			t.Fatalf("ineligible: %v", err)
		}
		defer func() { _, _ = nodes.ToggleEligibility(node.ID, true, nil) }()
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("blocking info: %v", r.err)
			}
			if r.meta.LastIndex <= qm.LastIndex || r.node.SchedulingEligibility != "ineligible" {
				t.Errorf("woke with index %d (before %d), eligibility %s", r.meta.LastIndex, qm.LastIndex, r.node.SchedulingEligibility)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("the blocking query did not return")
		}
	})
}
