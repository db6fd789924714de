package goapi

import (
	"testing"

	"github.com/hashicorp/nomad/api"
)

func TestNamespaces(t *testing.T) {
	c := client(t)
	ns := c.Namespaces()
	const name = "go-ns"
	ensure := func(t *testing.T) {
		t.Helper()
		if _, _, err := ns.Info(name, nil); err == nil {
			return
		}
		if _, err := ns.Register(&api.Namespace{Name: name, Description: "go api"}, nil); err != nil {
			t.Fatalf("register %s (set-up): %v", name, err)
		}
	}

	t.Run("create", func(t *testing.T) {
		wm, err := ns.Register(&api.Namespace{Name: name, Description: "go api"}, nil)
		if err != nil {
			t.Fatalf("register: %v", err)
		}
		if wm.LastIndex == 0 {
			t.Errorf("register: X-Nomad-Index 0")
		}
	})
	t.Run("info", func(t *testing.T) {
		ensure(t)
		got, qm, err := ns.Info(name, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		if got.Name != name || got.Description != "go api" || got.CreateIndex == 0 || got.ModifyIndex < got.CreateIndex {
			t.Errorf("info = %+v", *got)
		}
		if qm.LastIndex == 0 {
			t.Errorf("info: X-Nomad-Index 0")
		}
		if _, _, err := ns.Info("go-no-such-ns", nil); !isNotFound(err) {
			t.Errorf("info of an unknown namespace: %v, want a 404", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		ensure(t)
		if _, err := ns.Register(&api.Namespace{Name: name, Description: "updated", Meta: map[string]string{"owner": "go"}}, nil); err != nil {
			t.Fatalf("update: %v", err)
		}
		got, _, err := ns.Info(name, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		if got.Description != "updated" || got.Meta["owner"] != "go" {
			t.Errorf("after update: %+v", *got)
		}
	})
	t.Run("list", func(t *testing.T) {
		ensure(t)
		list, _, err := ns.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		names := map[string]bool{}
		for _, n := range list {
			names[n.Name] = true
		}
		if !names["default"] || !names[name] {
			t.Errorf("list: %v, want default and %s", names, name)
		}
		prefixed, _, err := ns.PrefixList("go-", nil)
		if err != nil {
			t.Fatalf("prefix list: %v", err)
		}
		if len(prefixed) != 1 || prefixed[0].Name != name {
			t.Errorf("prefix go-: %d namespaces", len(prefixed))
		}
	})
	t.Run("delete", func(t *testing.T) {
		ensure(t)
		if _, err := ns.Delete(name, nil); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if _, _, err := ns.Info(name, nil); !isNotFound(err) {
			t.Errorf("info after delete: %v, want a 404", err)
		}
	})
}
