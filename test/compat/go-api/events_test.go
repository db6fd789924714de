package goapi

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// streamUntil subscribes to topics from the current index, runs trigger, and returns the first event want accepts.
func streamUntil(t *testing.T, c *api.Client, topics map[api.Topic][]string, trigger func(), want func(api.Event) bool) api.Event {
	t.Helper()
	_, qm, err := c.Jobs().List(nil)
	if err != nil {
		t.Fatalf("index: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	stream, err := c.EventStream().Stream(ctx, topics, qm.LastIndex, nil)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	trigger()
	for {
		select {
		case events, ok := <-stream:
			if !ok {
				t.Fatalf("the stream ended before a matching event")
			}
			if events.Err != nil {
				t.Fatalf("stream error: %v", events.Err)
			}
			for _, e := range events.Events {
				if e.Topic == "" || e.Type == "" || e.Index == 0 || e.Payload == nil {
					t.Errorf("event %+v: a field is empty", e)
				}
				if want(e) {
					return e
				}
			}
		case <-ctx.Done():
			t.Fatalf("no matching event within 15s")
		}
	}
}

func TestEvents(t *testing.T) {
	c := client(t)
	node := readyNodes(t, c)[1]

	t.Run("job", func(t *testing.T) {
		const id = "go-events"
		e := streamUntil(t, c, map[api.Topic][]string{api.TopicJob: {id}},
			func() {
				if _, _, err := c.Jobs().Register(batchJob(id, false), nil); err != nil {
					t.Fatalf("register: %v", err)
				}
			},
			func(e api.Event) bool { return e.Topic == api.TopicJob && e.Key == id })
		if e.Type != "JobRegistered" {
			t.Errorf("Type %s, want JobRegistered", e.Type)
		}
		job, err := e.Job()
		if err != nil || job == nil || *job.ID != id {
			t.Errorf("payload job: %v %v", job, err)
		}
	})
	t.Run("node", func(t *testing.T) {
		defer func() { _, _ = c.Nodes().ToggleEligibility(node.ID, true, nil) }()
		e := streamUntil(t, c, map[api.Topic][]string{api.TopicNode: {"*"}},
			func() {
				if _, err := c.Nodes().ToggleEligibility(node.ID, false, nil); err != nil {
					t.Fatalf("ineligible: %v", err)
				}
			},
			func(e api.Event) bool { return e.Topic == api.TopicNode && e.Key == node.ID })
		if e.Type != "NodeEligibility" {
			t.Errorf("Type %s, want NodeEligibility", e.Type)
		}
		payload, _ := e.Payload["Node"].(map[string]any)
		if secret, ok := payload["SecretID"]; !ok || secret != "" {
			t.Errorf("payload SecretID %v, want present and empty", secret)
		}
	})
}
