package goapi

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func TestNodes(t *testing.T) {
	c := client(t)
	nodes := c.Nodes()
	ready := readyNodes(t, c)
	first, second := ready[0], ready[1]

	t.Run("list", func(t *testing.T) {
		list, qm, err := nodes.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if qm.LastIndex == 0 {
			t.Errorf("list: X-Nomad-Index 0")
		}
		for _, n := range list {
			if n.ID == "" || n.Name == "" || n.Datacenter != "dc1" || n.Version == "" || n.Drivers["mock_driver"] == nil {
				t.Errorf("stub %+v: want ID, Name, dc1, Version, a mock_driver", *n)
			}
			if n.NodePool != "default" {
				t.Errorf("stub %s: NodePool %q, want default", n.Name, n.NodePool)
			}
			if n.SchedulingEligibility == "" || n.CreateIndex == 0 {
				t.Errorf("stub %s: SchedulingEligibility %q CreateIndex %d", n.Name, n.SchedulingEligibility, n.CreateIndex)
			}
		}
	})
	t.Run("list filters", func(t *testing.T) {
		byPrefix, _, err := nodes.PrefixList(first.ID[:8])
		if err != nil || len(byPrefix) != 1 || byPrefix[0].ID != first.ID {
			t.Errorf("prefix: %d nodes, %v", len(byPrefix), err)
		}
		byFilter, _, err := nodes.List(&api.QueryOptions{Filter: `Name == "` + first.Name + `"`})
		if err != nil || len(byFilter) != 1 || byFilter[0].ID != first.ID {
			t.Errorf("filter: %d nodes, %v", len(byFilter), err)
		}
		withResources, _, err := nodes.List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
		if err != nil {
			t.Fatalf("resources=true: %v", err)
		}
		for _, n := range withResources {
			if n.NodeResources == nil {
				t.Errorf("resources=true: %s has no NodeResources", n.Name)
			}
		}
	})
	t.Run("info", func(t *testing.T) {
		n, _, err := nodes.Info(first.ID, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		if n.ID != first.ID || n.Status != "ready" || n.Attributes["kernel.name"] == "" || n.NodeResources == nil {
			t.Errorf("info: ID %s Status %s, attributes %d, NodeResources %v", n.ID, n.Status, len(n.Attributes), n.NodeResources)
		}
		if n.NodePool != "default" {
			t.Errorf("info: NodePool %q, want default", n.NodePool)
		}
		if n.Resources == nil || n.Resources.CPU == nil || *n.Resources.CPU == 0 || n.Reserved == nil {
			t.Errorf("info: legacy Resources %+v Reserved %+v, want them filled (the CLI reads them)", n.Resources, n.Reserved)
		}
		if _, _, err := nodes.Info("00000000-0000-0000-0000-000000000000", nil); !isNotFound(err) {
			t.Errorf("info of an unknown node: %v, want a 404", err)
		}
	})
	t.Run("allocations", func(t *testing.T) {
		allocs, _, err := nodes.Allocations(first.ID, nil)
		if err != nil {
			t.Fatalf("allocations: %v", err)
		}
		for _, a := range allocs {
			if a.NodeID != first.ID {
				t.Errorf("allocation %s of node %s", a.ID, a.NodeID)
			}
		}
		// Nomad answers an empty list for a node it does not know.
		unknown, _, err := nodes.Allocations("nope", nil)
		if err != nil || len(unknown) != 0 {
			t.Errorf("allocations of an unknown node: %d, %v; want none and no error", len(unknown), err)
		}
	})
	t.Run("eligibility", func(t *testing.T) {
		resp, err := nodes.ToggleEligibility(second.ID, false, nil)
		if err != nil {
			t.Fatalf("ineligible: %v", err)
		}
		if resp.NodeModifyIndex == 0 {
			t.Errorf("ineligible: NodeModifyIndex 0")
		}
		if n, _, _ := nodes.Info(second.ID, nil); n == nil || n.SchedulingEligibility != "ineligible" {
			t.Errorf("not ineligible")
		}
		if _, err := nodes.ToggleEligibility(second.ID, true, nil); err != nil {
			t.Fatalf("eligible: %v", err)
		}
		if n, _, _ := nodes.Info(second.ID, nil); n == nil || n.SchedulingEligibility != "eligible" {
			t.Errorf("not eligible again")
		}
	})
	t.Run("drain", func(t *testing.T) {
		resp, err := nodes.UpdateDrain(second.ID, &api.DrainSpec{Deadline: time.Minute}, false, nil)
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
		if resp.NodeModifyIndex == 0 {
			t.Errorf("drain: NodeModifyIndex 0")
		}
		// No allocations on it: the drain is done at once, and the node left ineligible.
		eventually(t, "the drain done", 15*time.Second, func() (bool, error) {
			n, _, err := nodes.Info(second.ID, nil)
			return err == nil && n.DrainStrategy == nil && n.SchedulingEligibility == "ineligible" && n.LastDrain != nil, err
		})
		if _, err := nodes.UpdateDrain(second.ID, nil, true, nil); err != nil {
			t.Fatalf("drain off: %v", err)
		}
		n, _, err := nodes.Info(second.ID, nil)
		if err != nil || n.Drain || n.SchedulingEligibility != "eligible" {
			t.Errorf("after drain off: %+v %v, want eligible and not draining", n, err)
		}
	})
	t.Run("evaluate", func(t *testing.T) {
		if _, _, err := nodes.ForceEvaluate(first.ID, nil); err != nil {
			t.Errorf("force evaluate: %v", err)
		}
	})
	t.Run("pools", func(t *testing.T) {
		pools, _, err := c.NodePools().List(nil)
		if err != nil {
			t.Fatalf("node pools: %v", err)
		}
		names := map[string]string{}
		for _, p := range pools {
			names[p.Name] = p.Description
		}
		if names["all"] != "Node pool with all nodes in the cluster." || names["default"] != "Default node pool." {
			t.Errorf("node pools %v, want all and default with Nomad's descriptions", names)
		}
	})
}
