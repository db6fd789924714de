package goapi

// Nomad's ACL system through the Go api client: bootstrap, policies, tokens
// (one-time tokens included), roles, and what a token lets its holder do.
// Expected answers are Nomad 1.6.1's (nomad/acl_endpoint.go,
// command/agent/acl_endpoint.go). Only against a server with ACLs enabled:
// see acl_helpers_test.go.

import (
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func TestACLBootstrap(t *testing.T) {
	mgmt := aclManagement(t)
	anonymous := aclClient(t, "")

	t.Run("bootstrap", func(t *testing.T) {
		boot := aclBoot.token
		if boot == nil {
			t.Skip("the server was bootstrapped before this run (CHRONOMAD_ACL_TOKEN)")
		}
		if !isUUID(boot.AccessorID) || !isUUID(boot.SecretID) || boot.AccessorID == boot.SecretID {
			t.Errorf("bootstrap IDs: accessor %q, secret %q, want two UUIDs", boot.AccessorID, boot.SecretID)
		}
		if boot.Name != "Bootstrap Token" || boot.Type != "management" || !boot.Global ||
			len(boot.Policies) != 0 || len(boot.Roles) != 0 || boot.ExpirationTime != nil {
			t.Errorf("bootstrap token = %+v, want a global management token named Bootstrap Token", *boot)
		}
		if !recent(boot.CreateTime) || boot.CreateIndex == 0 || boot.ModifyIndex < boot.CreateIndex {
			t.Errorf("bootstrap token times and indexes: %v, %d, %d", boot.CreateTime, boot.CreateIndex, boot.ModifyIndex)
		}
	})
	t.Run("self", func(t *testing.T) {
		self, qm, err := mgmt.ACLTokens().Self(nil)
		if err != nil {
			t.Fatalf("self: %v", err)
		}
		if self.Type != "management" || self.SecretID != aclBoot.secret {
			t.Errorf("self = %+v, want the management token", *self)
		}
		if qm.LastIndex == 0 {
			t.Errorf("self: X-Nomad-Index 0")
		}
	})
	t.Run("second_bootstrap_refused", func(t *testing.T) {
		_, _, err := anonymous.ACLTokens().Bootstrap(nil)
		wantRefused(t, "second bootstrap", err, 400, "ACL bootstrap already done")
	})
}

func TestACLPolicies(t *testing.T) {
	mgmt := aclManagement(t)
	policies := mgmt.ACLPolicies()
	name := aclName("policy")
	const rules = `namespace "default" { policy = "read" }`
	ensure := func(t *testing.T) {
		t.Helper()
		if _, _, err := policies.Info(name, nil); err != nil {
			ensurePolicy(t, mgmt, name, rules)
		}
	}

	t.Run("upsert", func(t *testing.T) {
		wm, err := policies.Upsert(&api.ACLPolicy{Name: name, Description: "go api", Rules: rules}, nil)
		if err != nil {
			t.Fatalf("upsert: %v", err)
		}
		if wm.LastIndex == 0 {
			t.Errorf("upsert: X-Nomad-Index 0")
		}
	})
	t.Run("info", func(t *testing.T) {
		ensure(t)
		got, qm, err := policies.Info(name, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		if got.Name != name || got.Rules != rules || got.CreateIndex == 0 || got.ModifyIndex < got.CreateIndex {
			t.Errorf("info = %+v", *got)
		}
		if qm.LastIndex == 0 {
			t.Errorf("info: X-Nomad-Index 0")
		}
	})
	t.Run("info_unknown", func(t *testing.T) {
		_, _, err := policies.Info(aclName("no-such-policy"), nil)
		wantRefused(t, "info of an unknown policy", err, 404, "ACL policy not found")
	})
	t.Run("list", func(t *testing.T) {
		ensure(t)
		list, qm, err := policies.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		i := slices.IndexFunc(list, func(p *api.ACLPolicyListStub) bool { return p.Name == name })
		if i < 0 {
			t.Fatalf("list has no %s: %d policies", name, len(list))
		}
		if list[i].CreateIndex == 0 {
			t.Errorf("list stub = %+v", *list[i])
		}
		if qm.LastIndex == 0 {
			t.Errorf("list: X-Nomad-Index 0")
		}
	})
	t.Run("update", func(t *testing.T) {
		ensure(t)
		before, _, err := policies.Info(name, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		updated := rules + "\nnode { policy = \"read\" }"
		if _, err := policies.Upsert(&api.ACLPolicy{Name: name, Description: "updated", Rules: updated}, nil); err != nil {
			t.Fatalf("update: %v", err)
		}
		got, _, err := policies.Info(name, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		if got.Description != "updated" || got.Rules != updated ||
			got.CreateIndex != before.CreateIndex || got.ModifyIndex <= before.ModifyIndex {
			t.Errorf("after update: %+v (before: %+v)", *got, *before)
		}
	})
	t.Run("invalid_rules_refused", func(t *testing.T) {
		_, err := policies.Upsert(&api.ACLPolicy{
			Name:  aclName("bad-policy"),
			Rules: `namespace "default" { policy = "superuser" }`,
		}, nil)
		wantRefused(t, "upsert of a policy with an unknown namespace policy", err, 400, "policy 0 invalid")
	})
	t.Run("delete", func(t *testing.T) {
		ensure(t)
		if _, err := policies.Delete(name, nil); err != nil {
			t.Fatalf("delete: %v", err)
		}
		_, _, err := policies.Info(name, nil)
		wantRefused(t, "info after delete", err, 404, "ACL policy not found")
	})
}

func TestACLTokens(t *testing.T) {
	mgmt := aclManagement(t)
	tokens := mgmt.ACLTokens()
	readDefault := aclName("token-read")
	readNodes := aclName("token-nodes")
	ensurePolicy(t, mgmt, readDefault, `namespace "default" { policy = "read" }`)
	ensurePolicy(t, mgmt, readNodes, `node { policy = "read" }`)

	var token *api.ACLToken
	ensure := func(t *testing.T) *api.ACLToken {
		t.Helper()
		if token == nil {
			token = clientToken(t, mgmt, "go client", readDefault)
		}
		return token
	}

	t.Run("create", func(t *testing.T) {
		got, wm, err := tokens.Create(&api.ACLToken{Name: "go client", Type: "client", Policies: []string{readDefault}}, nil)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		token = got
		if !isUUID(got.AccessorID) || !isUUID(got.SecretID) {
			t.Errorf("create IDs: accessor %q, secret %q, want UUIDs", got.AccessorID, got.SecretID)
		}
		if got.Name != "go client" || got.Type != "client" || !slices.Equal(got.Policies, []string{readDefault}) ||
			got.Global || got.ExpirationTime != nil {
			t.Errorf("create = %+v", *got)
		}
		if !recent(got.CreateTime) || got.CreateIndex == 0 || got.ModifyIndex < got.CreateIndex {
			t.Errorf("create times and indexes: %v, %d, %d", got.CreateTime, got.CreateIndex, got.ModifyIndex)
		}
		if wm.LastIndex == 0 {
			t.Errorf("create: X-Nomad-Index 0")
		}
	})
	t.Run("create_with_ttl", func(t *testing.T) {
		got, _, err := tokens.Create(&api.ACLToken{
			Name: "go ttl", Type: "client", Policies: []string{readDefault}, ExpirationTTL: time.Hour,
		}, nil)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if got.ExpirationTime == nil || !near(got.ExpirationTime.Sub(got.CreateTime), time.Hour) {
			t.Errorf("expiration time %v, create time %v: want an hour apart", got.ExpirationTime, got.CreateTime)
		}
	})
	t.Run("create_invalid_refused", func(t *testing.T) {
		_, _, err := tokens.Create(&api.ACLToken{Name: "go no policy", Type: "client"}, nil)
		wantRefused(t, "create of a client token without policies or roles", err, 400, "client token missing policies or roles")
		_, _, err = tokens.Create(&api.ACLToken{Name: "go bad type", Type: "superuser", Policies: []string{readDefault}}, nil)
		wantRefused(t, "create of a token of an unknown type", err, 400, "token type must be client or management")
	})
	t.Run("info", func(t *testing.T) {
		want := ensure(t)
		got, qm, err := tokens.Info(want.AccessorID, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		// The secret is checked in secret_shown_to_management.
		if got.AccessorID != want.AccessorID || got.Name != want.Name || got.Type != want.Type ||
			!slices.Equal(got.Policies, want.Policies) || got.CreateIndex != want.CreateIndex {
			t.Errorf("info = %+v, want %+v", *got, *want)
		}
		if qm.LastIndex == 0 {
			t.Errorf("info: X-Nomad-Index 0")
		}
	})
	t.Run("info_unknown", func(t *testing.T) {
		_, _, err := tokens.Info(randomUUID(), nil)
		wantRefused(t, "info of an unknown accessor", err, 404, "ACL token not found")
	})
	t.Run("self", func(t *testing.T) {
		want := ensure(t)
		got, _, err := aclClient(t, want.SecretID).ACLTokens().Self(nil)
		if err != nil {
			t.Fatalf("self: %v", err)
		}
		if got.AccessorID != want.AccessorID || got.SecretID != want.SecretID || got.Type != "client" {
			t.Errorf("self = %+v, want %+v", *got, *want)
		}
	})
	t.Run("info_of_own_token", func(t *testing.T) {
		want := ensure(t)
		got, _, err := aclClient(t, want.SecretID).ACLTokens().Info(want.AccessorID, nil)
		if err != nil {
			t.Fatalf("info of the caller's own token: %v", err)
		}
		if got.AccessorID != want.AccessorID {
			t.Errorf("info = %+v", *got)
		}
	})
	t.Run("info_of_other_token_denied", func(t *testing.T) {
		holder := aclClient(t, ensure(t).SecretID)
		self, _, err := mgmt.ACLTokens().Self(nil)
		if err != nil {
			t.Fatalf("management self (set-up): %v", err)
		}
		_, _, err = holder.ACLTokens().Info(self.AccessorID, nil)
		wantDenied(t, "a client token reading the management token", err)
	})
	t.Run("list", func(t *testing.T) {
		want := ensure(t)
		list, qm, err := tokens.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		i := slices.IndexFunc(list, func(s *api.ACLTokenListStub) bool { return s.AccessorID == want.AccessorID })
		if i < 0 {
			t.Fatalf("list has no %s: %d tokens", want.AccessorID, len(list))
		}
		if stub := list[i]; stub.Name != want.Name || stub.Type != "client" || !slices.Equal(stub.Policies, want.Policies) {
			t.Errorf("list stub = %+v", *stub)
		}
		if qm.LastIndex == 0 {
			t.Errorf("list: X-Nomad-Index 0")
		}
	})
	t.Run("list_denied_to_client_token", func(t *testing.T) {
		_, _, err := aclClient(t, ensure(t).SecretID).ACLTokens().List(nil)
		wantDenied(t, "a client token listing tokens", err)
	})
	t.Run("update", func(t *testing.T) {
		before := ensure(t)
		change := *before
		change.Name = "go renamed"
		change.Policies = []string{readDefault, readNodes}
		got, wm, err := tokens.Update(&change, nil)
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		// The secret is checked in secret_shown_to_management.
		if got.AccessorID != before.AccessorID || got.Name != "go renamed" ||
			!slices.Equal(got.Policies, []string{readDefault, readNodes}) ||
			got.CreateIndex != before.CreateIndex || got.ModifyIndex <= before.ModifyIndex ||
			!got.CreateTime.Equal(before.CreateTime) {
			t.Errorf("update = %+v (before: %+v)", *got, *before)
		}
		if wm.LastIndex == 0 {
			t.Errorf("update: X-Nomad-Index 0")
		}
		// Later subtests use the secret: keep it whatever the answer shows.
		kept := *got
		kept.SecretID = before.SecretID
		token = &kept
	})
	t.Run("secret_shown_to_management", func(t *testing.T) {
		// Nomad answers a token's SecretID to a management token: on a read
		// (ACL.GetToken) and in the answer to an update (ACL.UpsertTokens).
		want := ensure(t)
		got, _, err := tokens.Info(want.AccessorID, nil)
		if err != nil {
			t.Fatalf("info: %v", err)
		}
		if got.SecretID != want.SecretID {
			t.Errorf("info by the management token: SecretID %q, want %q", got.SecretID, want.SecretID)
		}
		updated, _, err := tokens.Update(got, nil)
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if updated.SecretID != want.SecretID {
			t.Errorf("update answer: SecretID %q, want %q", updated.SecretID, want.SecretID)
		}
	})
	t.Run("one_time_token", func(t *testing.T) {
		want := ensure(t)
		ott, wm, err := aclClient(t, want.SecretID).ACLTokens().UpsertOneTimeToken(nil)
		if err != nil {
			t.Fatalf("upsert one-time token: %v", err)
		}
		// Nomad's one-time tokens expire 10 minutes after they are made.
		left := time.Until(ott.ExpiresAt)
		if !isUUID(ott.OneTimeSecretID) || ott.AccessorID != want.AccessorID || ott.CreateIndex == 0 ||
			left < 9*time.Minute+50*time.Second || left > 10*time.Minute+2*time.Second {
			t.Errorf("one-time token = %+v, want one for %s expiring in 10 minutes", *ott, want.AccessorID)
		}
		if wm.LastIndex == 0 {
			t.Errorf("upsert one-time token: X-Nomad-Index 0")
		}
		anonymous := aclClient(t, "")
		got, _, err := anonymous.ACLTokens().ExchangeOneTimeToken(ott.OneTimeSecretID, nil)
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		if got.AccessorID != want.AccessorID || got.SecretID != want.SecretID {
			t.Errorf("exchange = %+v, want the token %s with its secret", *got, want.AccessorID)
		}
		_, _, err = anonymous.ACLTokens().ExchangeOneTimeToken(ott.OneTimeSecretID, nil)
		wantDenied(t, "second exchange of a one-time token", err)
	})
	t.Run("one_time_token_denied_without_token", func(t *testing.T) {
		_, _, err := aclClient(t, "").ACLTokens().UpsertOneTimeToken(nil)
		wantDenied(t, "upsert of a one-time token without a token", err)
	})
	t.Run("delete", func(t *testing.T) {
		gone := ensure(t)
		if _, err := tokens.Delete(gone.AccessorID, nil); err != nil {
			t.Fatalf("delete: %v", err)
		}
		token = nil
		_, _, err := tokens.Info(gone.AccessorID, nil)
		wantRefused(t, "info after delete", err, 404, "ACL token not found")
		_, _, err = aclClient(t, gone.SecretID).Jobs().List(nil)
		wantDenied(t, "a request with the deleted token's secret", err)
		_, err = tokens.Delete(gone.AccessorID, nil)
		wantRefused(t, "second delete", err, 400, "Cannot delete nonexistent tokens")
	})
}

func TestACLRoles(t *testing.T) {
	mgmt := aclManagement(t)
	roles := mgmt.ACLRoles()
	readDefault := aclName("role-read")
	readNodes := aclName("role-nodes")
	ensurePolicy(t, mgmt, readDefault, `namespace "default" { policy = "read" }`)
	ensurePolicy(t, mgmt, readNodes, `node { policy = "read" }`)
	name := aclName("role")
	renamed := aclName("role-renamed")
	var role *api.ACLRole
	ensure := func(t *testing.T) *api.ACLRole {
		t.Helper()
		if role == nil {
			role = ensureRole(t, mgmt, name, readDefault)
		}
		return role
	}

	t.Run("create", func(t *testing.T) {
		got, wm, err := roles.Create(&api.ACLRole{
			Name: name, Description: "go api", Policies: []*api.ACLRolePolicyLink{{Name: readDefault}},
		}, nil)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		role = got
		if !isUUID(got.ID) || got.Name != name || got.Description != "go api" || len(got.Policies) != 1 ||
			got.Policies[0].Name != readDefault || got.CreateIndex == 0 || got.ModifyIndex < got.CreateIndex {
			t.Errorf("create = %+v", *got)
		}
		if wm.LastIndex == 0 {
			t.Errorf("create: X-Nomad-Index 0")
		}
	})
	t.Run("create_refused", func(t *testing.T) {
		ensure(t)
		_, _, err := roles.Create(&api.ACLRole{Name: name, Policies: []*api.ACLRolePolicyLink{{Name: readDefault}}}, nil)
		wantRefused(t, "create of a role with a taken name", err, 400, "already exists")
		_, _, err = roles.Create(&api.ACLRole{
			Name: aclName("role-bad"), Policies: []*api.ACLRolePolicyLink{{Name: aclName("no-such-policy")}},
		}, nil)
		wantRefused(t, "create of a role linking an unknown policy", err, 400, "cannot find policy")
	})
	t.Run("get", func(t *testing.T) {
		want := ensure(t)
		got, qm, err := roles.Get(want.ID, nil)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got.ID != want.ID || got.Name != want.Name || len(got.Policies) != len(want.Policies) || got.CreateIndex != want.CreateIndex {
			t.Errorf("get = %+v, want %+v", *got, *want)
		}
		if qm.LastIndex == 0 {
			t.Errorf("get: X-Nomad-Index 0")
		}
	})
	t.Run("get_unknown", func(t *testing.T) {
		_, _, err := roles.Get(randomUUID(), nil)
		wantRefused(t, "get of an unknown role", err, 404, "ACL role not found")
	})
	t.Run("get_by_name", func(t *testing.T) {
		want := ensure(t)
		got, _, err := roles.GetByName(want.Name, nil)
		if err != nil {
			t.Fatalf("get by name: %v", err)
		}
		if got.ID != want.ID {
			t.Errorf("get by name = %+v, want %+v", *got, *want)
		}
	})
	t.Run("list", func(t *testing.T) {
		want := ensure(t)
		list, qm, err := roles.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		i := slices.IndexFunc(list, func(r *api.ACLRoleListStub) bool { return r.ID == want.ID })
		if i < 0 {
			t.Fatalf("list has no %s: %d roles", want.ID, len(list))
		}
		if stub := list[i]; stub.Name != want.Name || len(stub.Policies) != len(want.Policies) {
			t.Errorf("list stub = %+v", *stub)
		}
		if qm.LastIndex == 0 {
			t.Errorf("list: X-Nomad-Index 0")
		}
	})
	t.Run("update", func(t *testing.T) {
		before := ensure(t)
		got, _, err := roles.Update(&api.ACLRole{
			ID: before.ID, Name: renamed, Description: "renamed",
			Policies: []*api.ACLRolePolicyLink{{Name: readDefault}, {Name: readNodes}},
		}, nil)
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		role = got
		if got.ID != before.ID || got.Name != renamed || got.Description != "renamed" || len(got.Policies) != 2 ||
			got.CreateIndex != before.CreateIndex || got.ModifyIndex <= before.ModifyIndex {
			t.Errorf("update = %+v (before: %+v)", *got, *before)
		}
		if _, _, err := roles.GetByName(name, nil); err == nil {
			t.Errorf("the old name still finds the role")
		} else {
			wantRefused(t, "get by the old name", err, 404, "ACL role not found")
		}
	})
	t.Run("token_links_role_by_name", func(t *testing.T) {
		want := ensure(t)
		token, _, err := mgmt.ACLTokens().Create(&api.ACLToken{
			Name: "go role holder", Type: "client", Roles: []*api.ACLTokenRoleLink{{Name: want.Name}},
		}, nil)
		if err != nil {
			t.Fatalf("create token with a role: %v", err)
		}
		if len(token.Roles) != 1 || token.Roles[0].ID != want.ID || token.Roles[0].Name != want.Name {
			t.Errorf("token roles = %v, want [{%s %s}]", roleLinks(token.Roles), want.ID, want.Name)
		}
		// The role's policy lets its holders list the jobs of the default namespace.
		if _, _, err := aclClient(t, token.SecretID).Jobs().List(nil); err != nil {
			t.Errorf("jobs list with a token holding the role: %v", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		gone := ensure(t)
		token, _, err := mgmt.ACLTokens().Create(&api.ACLToken{
			Name: "go role holder", Type: "client", Roles: []*api.ACLTokenRoleLink{{ID: gone.ID}},
		}, nil)
		if err != nil {
			t.Fatalf("create token with the role (set-up): %v", err)
		}
		if _, err := roles.Delete(gone.ID, nil); err != nil {
			t.Fatalf("delete: %v", err)
		}
		role = nil
		_, _, err = roles.Get(gone.ID, nil)
		wantRefused(t, "get after delete", err, 404, "ACL role not found")
		// A token's links to deleted roles are dropped when it is read.
		got, _, err := mgmt.ACLTokens().Info(token.AccessorID, nil)
		if err != nil {
			t.Fatalf("token info: %v", err)
		}
		if len(got.Roles) != 0 {
			t.Errorf("token roles after the role's delete = %v, want none", roleLinks(got.Roles))
		}
	})
}

func roleLinks(links []*api.ACLTokenRoleLink) []api.ACLTokenRoleLink {
	out := make([]api.ACLTokenRoleLink, 0, len(links))
	for _, l := range links {
		out = append(out, *l)
	}
	return out
}

// TestACLEnforcement: what a token lets its holder do through other endpoints.
func TestACLEnforcement(t *testing.T) {
	mgmt := aclManagement(t)
	ns := aclName("ns")
	if _, err := mgmt.Namespaces().Register(&api.Namespace{Name: ns}, nil); err != nil {
		t.Fatalf("register namespace %s (set-up): %v", ns, err)
	}
	otherOnly := aclName("other-ns-only")
	readDefault := aclName("enforce-read")
	ensurePolicy(t, mgmt, otherOnly, `namespace "`+ns+`" { policy = "read" }`)
	ensurePolicy(t, mgmt, readDefault, `namespace "default" { policy = "read" }`)
	other := aclClient(t, clientToken(t, mgmt, "go other namespace", otherOnly).SecretID)
	reader := aclClient(t, clientToken(t, mgmt, "go default reader", readDefault).SecretID)

	t.Run("anonymous_denied", func(t *testing.T) {
		_, _, err := aclClient(t, "").Jobs().List(nil)
		wantDenied(t, "jobs list without a token", err)
	})
	t.Run("unknown_secret_denied", func(t *testing.T) {
		_, _, err := aclClient(t, randomUUID()).Jobs().List(nil)
		wantDenied(t, "jobs list with an unknown secret", err)
	})
	t.Run("other_namespace_denied", func(t *testing.T) {
		_, _, err := other.Jobs().List(nil)
		wantDenied(t, "jobs list in default with a token for another namespace only", err)
	})
	t.Run("own_namespace_allowed", func(t *testing.T) {
		jobs, _, err := other.Jobs().List(&api.QueryOptions{Namespace: ns})
		if err != nil {
			t.Fatalf("jobs list in the token's namespace: %v", err)
		}
		if len(jobs) != 0 {
			t.Errorf("jobs list in a new namespace: %d jobs", len(jobs))
		}
	})
	t.Run("read_allowed", func(t *testing.T) {
		if _, _, err := reader.Jobs().List(nil); err != nil {
			t.Errorf("jobs list with a read token: %v", err)
		}
	})
	t.Run("read_cannot_submit", func(t *testing.T) {
		_, _, err := reader.Jobs().Register(batchJob(aclName("job"), false), nil)
		wantDenied(t, "job register with a read token", err)
	})
	t.Run("management_allowed", func(t *testing.T) {
		if _, _, err := mgmt.Jobs().List(nil); err != nil {
			t.Errorf("jobs list with the management token: %v", err)
		}
	})
	t.Run("client_token_cannot_write_policies", func(t *testing.T) {
		_, err := reader.ACLPolicies().Upsert(&api.ACLPolicy{Name: aclName("sneaky"), Rules: `node { policy = "write" }`}, nil)
		wantDenied(t, "policy upsert with a client token", err)
	})
	t.Run("client_token_lists_own_policies", func(t *testing.T) {
		list, _, err := reader.ACLPolicies().List(nil)
		if err != nil {
			t.Fatalf("policy list with a client token: %v", err)
		}
		names := make([]string, 0, len(list))
		for _, p := range list {
			names = append(names, p.Name)
		}
		if !slices.Equal(names, []string{readDefault}) {
			t.Errorf("policies a client token sees = %v, want only its own [%s]", names, readDefault)
		}
		if _, _, err := reader.ACLPolicies().Info(readDefault, nil); err != nil {
			t.Errorf("info of the token's own policy: %v", err)
		}
		_, _, err = reader.ACLPolicies().Info(otherOnly, nil)
		wantDenied(t, "info of a policy the token does not hold", err)
	})
}
