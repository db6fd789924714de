package goapi

// Single sign-on through the Go api client: auth methods, binding rules and
// JWT login. The JWTs are signed here, with keys made for the test, whose
// public keys the auth method lists (JWTValidationPubKeys). Expected answers
// are Nomad 1.6.1's (nomad/acl_endpoint.go, lib/auth, lib/auth/jwt). Only
// against a server with ACLs enabled: see acl_helpers_test.go.

import (
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// jwtMethod is a JWT auth method trusting the signers' keys.
func jwtMethod(name string, signers ...jwtSigner) *api.ACLAuthMethod {
	config := &api.ACLAuthMethodConfig{
		BoundAudiences:    []string{"go-acl"},
		BoundIssuer:       []string{"https://issuer.go-acl.test"},
		ClaimMappings:     map[string]string{"team": "team"},
		ListClaimMappings: map[string]string{"groups": "groups"},
	}
	for _, s := range signers {
		config.JWTValidationPubKeys = append(config.JWTValidationPubKeys, s.pem)
		config.SigningAlgs = append(config.SigningAlgs, s.alg)
	}
	return &api.ACLAuthMethod{
		Name:          name,
		Type:          "JWT",
		TokenLocality: "local",
		MaxTokenTTL:   time.Hour,
		Config:        config,
	}
}

// ensureMethod creates the auth method unless one of its name exists.
func ensureMethod(t *testing.T, mgmt *api.Client, method *api.ACLAuthMethod) {
	t.Helper()
	if _, _, err := mgmt.ACLAuthMethods().Get(method.Name, nil); err == nil {
		return
	}
	if _, _, err := mgmt.ACLAuthMethods().Create(method, nil); err != nil {
		t.Fatalf("create auth method %s (set-up): %v", method.Name, err)
	}
}

func TestACLAuthMethods(t *testing.T) {
	mgmt := aclManagement(t)
	methods := mgmt.ACLAuthMethods()
	signer := ed25519Signer(t)
	name := aclName("method")
	ensure := func(t *testing.T) { t.Helper(); ensureMethod(t, mgmt, jwtMethod(name, signer)) }

	t.Run("create", func(t *testing.T) {
		got, wm, err := methods.Create(jwtMethod(name, signer), nil)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if got.Name != name || got.Type != "JWT" || got.TokenLocality != "local" || got.MaxTokenTTL != time.Hour ||
			got.Default || got.Config == nil || !slices.Equal(got.Config.JWTValidationPubKeys, []string{signer.pem}) {
			t.Errorf("create = %+v", *got)
		}
		if !recent(got.CreateTime) || got.CreateIndex == 0 || got.ModifyIndex < got.CreateIndex {
			t.Errorf("create times and indexes: %v, %d, %d", got.CreateTime, got.CreateIndex, got.ModifyIndex)
		}
		if wm.LastIndex == 0 {
			t.Errorf("create: X-Nomad-Index 0")
		}
	})
	t.Run("create_invalid_refused", func(t *testing.T) {
		bad := jwtMethod(aclName("method-bad"), signer)
		bad.TokenLocality = "regional"
		_, _, err := methods.Create(bad, nil)
		wantRefused(t, "create with an unknown token locality", err, 400, "auth method 0 invalid")
		bad = jwtMethod(aclName("method-bad"), signer)
		bad.MaxTokenTTL = 0
		_, _, err = methods.Create(bad, nil)
		wantRefused(t, "create without MaxTokenTTL", err, 400, "invalid MaxTokenTTL")
	})
	t.Run("get", func(t *testing.T) {
		ensure(t)
		got, qm, err := methods.Get(name, nil)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		c := got.Config
		if got.Name != name || got.Type != "JWT" || got.MaxTokenTTL != time.Hour || c == nil ||
			!slices.Equal(c.JWTValidationPubKeys, []string{signer.pem}) || !slices.Equal(c.SigningAlgs, []string{"EdDSA"}) ||
			!slices.Equal(c.BoundAudiences, []string{"go-acl"}) || c.ClaimMappings["team"] != "team" ||
			c.ListClaimMappings["groups"] != "groups" {
			t.Errorf("get = %+v, config %+v", *got, c)
		}
		if qm.LastIndex == 0 {
			t.Errorf("get: X-Nomad-Index 0")
		}
	})
	t.Run("get_unknown", func(t *testing.T) {
		_, _, err := methods.Get(aclName("no-such-method"), nil)
		wantRefused(t, "get of an unknown auth method", err, 404, "ACL auth-method not found")
	})
	t.Run("get_denied_to_client_token", func(t *testing.T) {
		ensure(t)
		readDefault := aclName("method-read")
		ensurePolicy(t, mgmt, readDefault, `namespace "default" { policy = "read" }`)
		holder := aclClient(t, clientToken(t, mgmt, "go method reader", readDefault).SecretID)
		_, _, err := holder.ACLAuthMethods().Get(name, nil)
		wantDenied(t, "a client token reading an auth method", err)
	})
	t.Run("list", func(t *testing.T) {
		ensure(t)
		list, qm, err := methods.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		i := slices.IndexFunc(list, func(m *api.ACLAuthMethodListStub) bool { return m.Name == name })
		if i < 0 {
			t.Fatalf("list has no %s: %d methods", name, len(list))
		}
		if stub := list[i]; stub.Type != "JWT" || stub.Default || stub.CreateIndex == 0 {
			t.Errorf("list stub = %+v", *stub)
		}
		if qm.LastIndex == 0 {
			t.Errorf("list: X-Nomad-Index 0")
		}
	})
	t.Run("list_without_token", func(t *testing.T) {
		ensure(t)
		// Nomad lists auth methods to anyone: the login page needs them.
		list, _, err := aclClient(t, "").ACLAuthMethods().List(nil)
		if err != nil {
			t.Fatalf("list without a token: %v", err)
		}
		if !slices.ContainsFunc(list, func(m *api.ACLAuthMethodListStub) bool { return m.Name == name }) {
			t.Errorf("list without a token has no %s: %d methods", name, len(list))
		}
	})
	t.Run("update", func(t *testing.T) {
		ensure(t)
		before, _, err := methods.Get(name, nil)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		change := jwtMethod(name, signer)
		change.MaxTokenTTL = 2 * time.Hour
		change.Config.BoundAudiences = []string{"go-acl", "go-acl-2"}
		got, _, err := methods.Update(change, nil)
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if got.MaxTokenTTL != 2*time.Hour || got.Config == nil || len(got.Config.BoundAudiences) != 2 ||
			got.CreateIndex != before.CreateIndex || got.ModifyIndex <= before.ModifyIndex ||
			got.ModifyTime.Before(got.CreateTime) {
			t.Errorf("update = %+v (before: %+v)", *got, *before)
		}
	})
	t.Run("delete", func(t *testing.T) {
		ensure(t)
		if _, err := methods.Delete(name, nil); err != nil {
			t.Fatalf("delete: %v", err)
		}
		_, _, err := methods.Get(name, nil)
		wantRefused(t, "get after delete", err, 404, "ACL auth-method not found")
	})
}

func TestACLBindingRules(t *testing.T) {
	mgmt := aclManagement(t)
	rules := mgmt.ACLBindingRules()
	method := aclName("rules-method")
	ensureMethod(t, mgmt, jwtMethod(method, ed25519Signer(t)))
	const selector = `"engineering" in list.groups`
	var rule *api.ACLBindingRule
	ensure := func(t *testing.T) *api.ACLBindingRule {
		t.Helper()
		if rule == nil {
			var err error
			rule, _, err = rules.Create(&api.ACLBindingRule{
				AuthMethod: method, Selector: selector, BindType: "role", BindName: "engineers",
			}, nil)
			if err != nil {
				t.Fatalf("create binding rule (set-up): %v", err)
			}
		}
		return rule
	}

	t.Run("create", func(t *testing.T) {
		got, wm, err := rules.Create(&api.ACLBindingRule{
			Description: "go api", AuthMethod: method, Selector: selector, BindType: "role", BindName: "engineers",
		}, nil)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		rule = got
		if !isUUID(got.ID) || got.Description != "go api" || got.AuthMethod != method || got.Selector != selector ||
			got.BindType != "role" || got.BindName != "engineers" {
			t.Errorf("create = %+v", *got)
		}
		if !recent(got.CreateTime) || got.CreateIndex == 0 || got.ModifyIndex < got.CreateIndex {
			t.Errorf("create times and indexes: %v, %d, %d", got.CreateTime, got.CreateIndex, got.ModifyIndex)
		}
		if wm.LastIndex == 0 {
			t.Errorf("create: X-Nomad-Index 0")
		}
	})
	t.Run("create_refused", func(t *testing.T) {
		_, _, err := rules.Create(&api.ACLBindingRule{AuthMethod: aclName("no-such-method"), BindType: "management"}, nil)
		wantRefused(t, "create for an unknown auth method", err, 400, "not found")
		_, _, err = rules.Create(&api.ACLBindingRule{AuthMethod: method, BindType: "policy"}, nil)
		wantRefused(t, "create of a policy binding without a bind name", err, 400, "bind name is missing")
		_, _, err = rules.Create(&api.ACLBindingRule{AuthMethod: method, BindType: "management", BindName: "x"}, nil)
		wantRefused(t, "create of a management binding with a bind name", err, 400, "bind name should be empty")
		_, _, err = rules.Create(&api.ACLBindingRule{AuthMethod: method, BindType: "role", BindName: "x", Selector: `value.team ==`}, nil)
		wantRefused(t, "create with a selector that does not parse", err, 400, "selector is invalid")
	})
	t.Run("get", func(t *testing.T) {
		want := ensure(t)
		got, qm, err := rules.Get(want.ID, nil)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got.ID != want.ID || got.AuthMethod != method || got.Selector != want.Selector || got.BindType != want.BindType ||
			got.BindName != want.BindName || got.CreateIndex != want.CreateIndex {
			t.Errorf("get = %+v, want %+v", *got, *want)
		}
		if qm.LastIndex == 0 {
			t.Errorf("get: X-Nomad-Index 0")
		}
	})
	t.Run("get_unknown", func(t *testing.T) {
		_, _, err := rules.Get(randomUUID(), nil)
		wantRefused(t, "get of an unknown binding rule", err, 404, "ACL binding rule not found")
	})
	t.Run("list", func(t *testing.T) {
		want := ensure(t)
		list, qm, err := rules.List(nil)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		i := slices.IndexFunc(list, func(r *api.ACLBindingRuleListStub) bool { return r.ID == want.ID })
		if i < 0 {
			t.Fatalf("list has no %s: %d rules", want.ID, len(list))
		}
		if stub := list[i]; stub.AuthMethod != method || stub.CreateIndex == 0 {
			t.Errorf("list stub = %+v", *stub)
		}
		if qm.LastIndex == 0 {
			t.Errorf("list: X-Nomad-Index 0")
		}
	})
	t.Run("list_denied_to_client_token", func(t *testing.T) {
		readDefault := aclName("rules-read")
		ensurePolicy(t, mgmt, readDefault, `namespace "default" { policy = "read" }`)
		holder := aclClient(t, clientToken(t, mgmt, "go rules reader", readDefault).SecretID)
		_, _, err := holder.ACLBindingRules().List(nil)
		wantDenied(t, "a client token listing binding rules", err)
	})
	t.Run("update", func(t *testing.T) {
		before := ensure(t)
		change := *before
		change.Description = "updated"
		change.Selector = `value.team == "platform"`
		change.BindType = "policy"
		change.BindName = "platform"
		got, _, err := rules.Update(&change, nil)
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		rule = got
		if got.ID != before.ID || got.Description != "updated" || got.Selector != change.Selector ||
			got.BindType != "policy" || got.BindName != "platform" || got.AuthMethod != method ||
			got.CreateIndex != before.CreateIndex || got.ModifyIndex <= before.ModifyIndex {
			t.Errorf("update = %+v (before: %+v)", *got, *before)
		}
	})
	t.Run("update_auth_method_refused", func(t *testing.T) {
		other := aclName("rules-method-2")
		ensureMethod(t, mgmt, jwtMethod(other, ed25519Signer(t)))
		change := *ensure(t)
		change.AuthMethod = other
		_, _, err := rules.Update(&change, nil)
		wantRefused(t, "moving a binding rule to another auth method", err, 400, "cannot update auth method for binding rule")
	})
	t.Run("delete", func(t *testing.T) {
		gone := ensure(t)
		if _, err := rules.Delete(gone.ID, nil); err != nil {
			t.Fatalf("delete: %v", err)
		}
		rule = nil
		_, _, err := rules.Get(gone.ID, nil)
		wantRefused(t, "get after delete", err, 404, "ACL binding rule not found")
	})
}

func TestACLLogin(t *testing.T) {
	mgmt := aclManagement(t)
	anonymous := aclClient(t, "")
	ed, rs, stranger := ed25519Signer(t), rs256Signer(t), ed25519Signer(t)
	method := aclName("login")
	ensureMethod(t, mgmt, jwtMethod(method, ed, rs))

	readDefault := aclName("login-read")
	teamPolicy := aclName("team-platform")
	ensurePolicy(t, mgmt, readDefault, `namespace "default" { policy = "read" }`)
	ensurePolicy(t, mgmt, teamPolicy, `node { policy = "read" }`)
	role := ensureRole(t, mgmt, aclName("login-engineers"), readDefault)
	for _, r := range []*api.ACLBindingRule{
		{AuthMethod: method, Selector: `"engineering" in list.groups`, BindType: "role", BindName: role.Name},
		// Bind names see claim values lowercased: "Platform" binds go-acl-team-platform-<run>.
		{AuthMethod: method, Selector: `value.team == "Platform"`, BindType: "policy", BindName: "go-acl-team-${value.team}-" + aclRun},
		{AuthMethod: method, Selector: `"admins" in list.groups`, BindType: "management"},
	} {
		if _, _, err := mgmt.ACLBindingRules().Create(r, nil); err != nil {
			t.Fatalf("create binding rule %+v (set-up): %v", *r, err)
		}
	}

	claims := func(change func(map[string]any)) map[string]any {
		now := time.Now()
		c := map[string]any{
			"iss":    "https://issuer.go-acl.test",
			"aud":    []string{"go-acl"},
			"sub":    "alice",
			"iat":    now.Add(-10 * time.Second).Unix(),
			"nbf":    now.Add(-10 * time.Second).Unix(),
			"exp":    now.Add(5 * time.Minute).Unix(),
			"team":   "Platform",
			"groups": []string{"engineering", "ops"},
		}
		if change != nil {
			change(c)
		}
		return c
	}
	login := func(jwt string) (*api.ACLToken, error) {
		token, _, err := anonymous.ACLAuth().Login(&api.ACLLoginRequest{AuthMethodName: method, LoginToken: jwt}, nil)
		return token, err
	}
	var loggedIn *api.ACLToken

	t.Run("login_ed25519", func(t *testing.T) {
		token, err := login(ed.jwt(t, claims(nil)))
		if err != nil {
			t.Fatalf("login: %v", err)
		}
		loggedIn = token
		if !isUUID(token.AccessorID) || !isUUID(token.SecretID) || token.Name != "JWT-"+method ||
			token.Type != "client" || token.Global {
			t.Errorf("login token = %+v, want a local client token named JWT-%s", *token, method)
		}
		if !slices.Equal(token.Policies, []string{teamPolicy}) {
			t.Errorf("login token policies = %v, want [%s]", token.Policies, teamPolicy)
		}
		if len(token.Roles) != 1 || token.Roles[0].ID != role.ID || token.Roles[0].Name != role.Name {
			t.Errorf("login token roles = %v, want [{%s %s}]", roleLinks(token.Roles), role.ID, role.Name)
		}
		if token.ExpirationTime == nil || !near(token.ExpirationTime.Sub(token.CreateTime), time.Hour) {
			t.Errorf("login token expires at %v, created at %v: want MaxTokenTTL (1h) apart", token.ExpirationTime, token.CreateTime)
		}
	})
	t.Run("login_token_works", func(t *testing.T) {
		if loggedIn == nil {
			t.Skip("login_ed25519 made no token")
		}
		holder := aclClient(t, loggedIn.SecretID)
		self, _, err := holder.ACLTokens().Self(nil)
		if err != nil {
			t.Fatalf("self with the login token: %v", err)
		}
		if self.AccessorID != loggedIn.AccessorID {
			t.Errorf("self = %+v, want %s", *self, loggedIn.AccessorID)
		}
		if _, _, err := holder.Jobs().List(nil); err != nil {
			t.Errorf("jobs list with the login token (its role reads default): %v", err)
		}
		_, _, err = holder.ACLTokens().List(nil)
		wantDenied(t, "token list with the login token", err)
	})
	t.Run("login_rs256", func(t *testing.T) {
		token, err := login(rs.jwt(t, claims(nil)))
		if err != nil {
			t.Fatalf("login: %v", err)
		}
		if token.Type != "client" || !slices.Equal(token.Policies, []string{teamPolicy}) || len(token.Roles) != 1 {
			t.Errorf("login token = %+v", *token)
		}
	})
	t.Run("management_binding", func(t *testing.T) {
		token, err := login(ed.jwt(t, claims(func(c map[string]any) { c["groups"] = []string{"admins", "engineering"} })))
		if err != nil {
			t.Fatalf("login: %v", err)
		}
		if token.Type != "management" || len(token.Policies) != 0 || len(token.Roles) != 0 {
			t.Errorf("login token = %+v, want a management token without policies or roles", *token)
		}
	})
	t.Run("no_binding_matched", func(t *testing.T) {
		// The team's policy does not exist and no selector matches: nothing to bind.
		_, err := login(ed.jwt(t, claims(func(c map[string]any) {
			c["team"] = "Sales"
			c["groups"] = []string{"sales"}
		})))
		wantRefused(t, "login matching no binding", err, 400, "no role or policy bindings matched")
	})
	t.Run("unverifiable_refused", func(t *testing.T) {
		cases := map[string]string{
			"signed by an unknown key": stranger.jwt(t, claims(nil)),
			"for another audience":     ed.jwt(t, claims(func(c map[string]any) { c["aud"] = []string{"someone-else"} })),
			"from another issuer":      ed.jwt(t, claims(func(c map[string]any) { c["iss"] = "https://other.test" })),
			"expired an hour ago": ed.jwt(t, claims(func(c map[string]any) {
				c["iat"] = time.Now().Add(-2 * time.Hour).Unix()
				c["nbf"] = time.Now().Add(-2 * time.Hour).Unix()
				c["exp"] = time.Now().Add(-time.Hour).Unix()
			})),
		}
		for what, jwt := range cases {
			_, err := login(jwt)
			wantRefused(t, "login with a JWT "+what, err, 401, "unable to validate provided token")
		}
	})
	t.Run("bad_request_refused", func(t *testing.T) {
		_, _, err := anonymous.ACLAuth().Login(&api.ACLLoginRequest{AuthMethodName: aclName("no-such-method"), LoginToken: ed.jwt(t, claims(nil))}, nil)
		wantRefused(t, "login with an unknown auth method", err, 400, "not found")
		_, _, err = anonymous.ACLAuth().Login(&api.ACLLoginRequest{AuthMethodName: method}, nil)
		wantRefused(t, "login without a login token", err, 400, "missing login token")
	})
}
