package goapi

import (
	"testing"
	"time"
)

func TestGC(t *testing.T) {
	c := client(t)
	const id = "go-gc"
	readyNodes(t, c)

	t.Run("system gc", func(t *testing.T) {
		ensureJob(t, c, batchJob(id, false))
		deadJob(t, c, id)
		if err := c.System().GarbageCollect(); err != nil {
			t.Fatalf("gc: %v", err)
		}
		// As in Nomad, the collection runs after the call returns.
		eventually(t, id+" collected", 15*time.Second, func() (bool, error) {
			_, _, err := c.Jobs().Info(id, nil)
			return isNotFound(err), nil
		})
	})
	t.Run("reconcile summaries", func(t *testing.T) {
		if err := c.System().ReconcileSummaries(); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
	})
}

func TestRegions(t *testing.T) {
	c := client(t)
	t.Run("list", func(t *testing.T) {
		regions, err := c.Regions().List()
		if err != nil || len(regions) != 1 || regions[0] != "global" {
			t.Errorf("regions %v %v, want [global]", regions, err)
		}
	})
}

func TestAgent(t *testing.T) {
	c := client(t)
	t.Run("self", func(t *testing.T) {
		self, err := c.Agent().Self()
		if err != nil {
			t.Fatalf("self: %v", err)
		}
		if self.Member.Name == "" || self.Member.Addr == "" || self.Member.Port == 0 || self.Member.Status != "alive" {
			t.Errorf("member %+v", self.Member)
		}
		if self.Config["Region"] != "global" || self.Config["Datacenter"] == nil || self.Config["NodeName"] == nil {
			t.Errorf("config Region %v Datacenter %v NodeName %v", self.Config["Region"], self.Config["Datacenter"], self.Config["NodeName"])
		}
		if region, err := c.Agent().Region(); err != nil || region != "global" {
			t.Errorf("Agent().Region() = %q %v", region, err)
		}
	})
	t.Run("members", func(t *testing.T) {
		members, err := c.Agent().Members()
		if err != nil {
			t.Fatalf("members: %v", err)
		}
		if members.ServerRegion != "global" || len(members.Members) == 0 || members.Members[0].Status != "alive" {
			t.Errorf("members %+v", *members)
		}
	})
	t.Run("status", func(t *testing.T) {
		leader, err := c.Status().Leader()
		if err != nil || leader == "" {
			t.Fatalf("leader %q %v", leader, err)
		}
		peers, err := c.Status().Peers()
		if err != nil || len(peers) == 0 || peers[0] != leader {
			t.Errorf("peers %v %v, want the leader", peers, err)
		}
	})
	t.Run("operator raft", func(t *testing.T) {
		conf, err := c.Operator().RaftGetConfiguration(nil)
		if err != nil {
			t.Fatalf("raft configuration: %v", err)
		}
		if len(conf.Servers) == 0 || !conf.Servers[0].Leader || !conf.Servers[0].Voter || conf.Servers[0].Address == "" {
			t.Errorf("raft servers %+v", conf.Servers)
		}
	})
	t.Run("operator autopilot", func(t *testing.T) {
		conf, _, err := c.Operator().AutopilotGetConfiguration(nil)
		if err != nil {
			t.Fatalf("autopilot configuration: %v", err)
		}
		if !conf.CleanupDeadServers {
			t.Errorf("autopilot %+v, want CleanupDeadServers (Nomad's default)", *conf)
		}
	})
	t.Run("scheduler configuration", func(t *testing.T) {
		conf, _, err := c.Operator().SchedulerGetConfiguration(nil)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if conf.SchedulerConfig == nil || conf.SchedulerConfig.SchedulerAlgorithm != "binpack" {
			t.Fatalf("scheduler configuration %+v", conf.SchedulerConfig)
		}
		// The newest client sends fields Nomad 1.6 does not know: ignored, as Nomad's decoder does.
		resp, _, err := c.Operator().SchedulerSetConfiguration(conf.SchedulerConfig, nil)
		if err != nil || !resp.Updated {
			t.Errorf("set: %+v %v", resp, err)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		m, _, err := c.Operator().MetricsSummary(nil)
		if err != nil {
			t.Fatalf("metrics: %v", err)
		}
		found := false
		for _, g := range m.Gauges {
			found = found || len(g.Name) > 6 && g.Name[:6] == "nomad."
		}
		if m.Timestamp == "" || !found {
			t.Errorf("metrics: Timestamp %q, %d gauges, want nomad.* among them", m.Timestamp, len(m.Gauges))
		}
	})
}
