package goapi

import (
	"slices"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
)

func TestSearch(t *testing.T) {
	c := client(t)
	search := c.Search()
	const id = "go-search"
	ensureJob(t, c, batchJob(id, false))

	t.Run("prefix", func(t *testing.T) {
		resp, _, err := search.PrefixSearch("go-sea", contexts.Jobs, nil)
		if err != nil {
			t.Fatalf("prefix search: %v", err)
		}
		if !slices.Contains(resp.Matches[contexts.Jobs], id) || resp.Truncations[contexts.Jobs] {
			t.Errorf("jobs matches %v, truncated %v", resp.Matches[contexts.Jobs], resp.Truncations[contexts.Jobs])
		}
		node := readyNodes(t, c)[0]
		resp, _, err = search.PrefixSearch(node.ID[:6], contexts.Nodes, nil)
		if err != nil {
			t.Fatalf("prefix search of nodes: %v", err)
		}
		if !slices.Contains(resp.Matches[contexts.Nodes], node.ID) {
			t.Errorf("nodes matches %v, want %s", resp.Matches[contexts.Nodes], node.ID)
		}
	})
	t.Run("fuzzy", func(t *testing.T) {
		resp, _, err := search.FuzzySearch("go-sear", contexts.Jobs, nil)
		if err != nil {
			t.Fatalf("fuzzy search: %v", err)
		}
		want := api.FuzzyMatch{ID: id, Scope: []string{"default", id}}
		found := false
		for _, m := range resp.Matches[contexts.Jobs] {
			found = found || (m.ID == want.ID && slices.Equal(m.Scope, want.Scope))
		}
		if !found {
			t.Errorf("jobs matches %+v, want %+v", resp.Matches[contexts.Jobs], want)
		}
	})
}
