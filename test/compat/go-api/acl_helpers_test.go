package goapi

// Helpers of the ACL tests (acl_test.go, acl_login_test.go). Those need a
// server with ACLs enabled, which the area tests' server is not: they run
// against the server CHRONOMAD_ACL_ADDR names (test/compat/go-api-acl.test.ts
// starts one) and skip without it, so that the ACL-less run of
// test/compat/go-api.test.ts leaves them out.
//
// The first ACL test to run bootstraps the ACL system; its management token
// then serves every ACL test. Against a server bootstrapped before (a second
// run by hand), CHRONOMAD_ACL_TOKEN names a management token instead. Names
// carry a random suffix per run, so that a second run does not meet the
// first one's objects.

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// aclRun tells this run's ACL objects from an earlier run's.
var aclRun = func() string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}()

// aclName is a policy, role, auth-method or namespace name unique to this run.
func aclName(base string) string { return "go-acl-" + base + "-" + aclRun }

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func isUUID(s string) bool { return uuidPattern.MatchString(s) }

// randomUUID is a well-formed ID that names nothing.
func randomUUID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// aclClient is a client of the ACL server sending secret as its token (none when empty).
func aclClient(t *testing.T, secret string) *api.Client {
	t.Helper()
	addr := os.Getenv("CHRONOMAD_ACL_ADDR")
	if addr == "" {
		t.Skip("CHRONOMAD_ACL_ADDR is not set: no server with ACLs enabled to test against (test/compat/go-api-acl.test.ts starts one)")
	}
	cfg := api.DefaultConfig()
	cfg.Address = addr
	// Only what the test gives: no token, namespace or region from the environment.
	cfg.SecretID = secret
	cfg.Namespace = ""
	cfg.Region = ""
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatalf("api client: %v", err)
	}
	return c
}

var aclBoot struct {
	once sync.Once
	// token is the bootstrap answer; nil when CHRONOMAD_ACL_TOKEN names the token.
	token  *api.ACLToken
	secret string
	err    error
}

// aclManagement is a client holding the management token, bootstrapping the ACL system on first use.
func aclManagement(t *testing.T) *api.Client {
	t.Helper()
	anonymous := aclClient(t, "")
	aclBoot.once.Do(func() {
		if secret := os.Getenv("CHRONOMAD_ACL_TOKEN"); secret != "" {
			aclBoot.secret = secret
			return
		}
		token, _, err := anonymous.ACLTokens().Bootstrap(nil)
		if err != nil {
			aclBoot.err = err
			return
		}
		aclBoot.token, aclBoot.secret = token, token.SecretID
	})
	if aclBoot.err != nil {
		t.Fatalf("ACL bootstrap (set-up): %v", aclBoot.err)
	}
	return aclClient(t, aclBoot.secret)
}

// httpAnswer is the status code and body of the client's error for a non-2xx answer; 0 for any other error.
func httpAnswer(err error) (int, string) {
	var unexpected api.UnexpectedResponseError
	if errors.As(err, &unexpected) {
		return unexpected.StatusCode(), strings.TrimSpace(unexpected.Body())
	}
	return 0, ""
}

// wantRefused fails unless err is an answer with status code whose body contains text.
func wantRefused(t *testing.T, what string, err error, code int, text string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want %d %q", what, code, text)
		return
	}
	got, body := httpAnswer(err)
	if got != code || !strings.Contains(body, text) {
		t.Errorf("%s: %v, want %d with %q", what, err, code, text)
	}
}

// wantDenied fails unless err is Nomad's 403 "Permission denied", word for word.
func wantDenied(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want 403 Permission denied", what)
		return
	}
	if code, body := httpAnswer(err); code != 403 || body != "Permission denied" {
		t.Errorf("%s: %v, want 403 Permission denied", what, err)
	}
}

// recent: t is set and within the last ten minutes (the tests' server runs on this machine).
func recent(t time.Time) bool {
	return !t.IsZero() && time.Since(t) < 10*time.Minute && time.Until(t) < time.Minute
}

// near: d is want give or take two seconds (Nomad keeps nanoseconds, a JSON time may keep less).
func near(d, want time.Duration) bool {
	return d > want-2*time.Second && d < want+2*time.Second
}

// ensurePolicy upserts a policy (set-up of a test that is not about policies).
func ensurePolicy(t *testing.T, mgmt *api.Client, name, rules string) {
	t.Helper()
	if _, err := mgmt.ACLPolicies().Upsert(&api.ACLPolicy{Name: name, Rules: rules}, nil); err != nil {
		t.Fatalf("upsert policy %s (set-up): %v", name, err)
	}
}

// ensureRole is the role of that name, created with the policies when missing.
func ensureRole(t *testing.T, mgmt *api.Client, name string, policies ...string) *api.ACLRole {
	t.Helper()
	if role, _, err := mgmt.ACLRoles().GetByName(name, nil); err == nil {
		return role
	}
	links := make([]*api.ACLRolePolicyLink, 0, len(policies))
	for _, p := range policies {
		links = append(links, &api.ACLRolePolicyLink{Name: p})
	}
	role, _, err := mgmt.ACLRoles().Create(&api.ACLRole{Name: name, Policies: links}, nil)
	if err != nil {
		t.Fatalf("create role %s (set-up): %v", name, err)
	}
	return role
}

// clientToken creates a client token holding the policies.
func clientToken(t *testing.T, mgmt *api.Client, name string, policies ...string) *api.ACLToken {
	t.Helper()
	token, _, err := mgmt.ACLTokens().Create(&api.ACLToken{Name: name, Type: "client", Policies: policies}, nil)
	if err != nil {
		t.Fatalf("create token %s (set-up): %v", name, err)
	}
	return token
}

// jwtSigner signs JWTs by hand (header.claims.signature, base64url without
// padding) with a key made for the test; pem is its public key as an auth
// method's JWTValidationPubKeys takes it.
type jwtSigner struct {
	alg  string
	pem  string
	sign func(input []byte) ([]byte, error)
}

func publicKeyPEM(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatalf("marshal public key: %v", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func ed25519Signer(t *testing.T) jwtSigner {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("ed25519 key: %v", err)
	}
	return jwtSigner{
		alg:  "EdDSA",
		pem:  publicKeyPEM(t, pub),
		sign: func(input []byte) ([]byte, error) { return ed25519.Sign(priv, input), nil },
	}
}

func rs256Signer(t *testing.T) jwtSigner {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("RSA key: %v", err)
	}
	return jwtSigner{
		alg: "RS256",
		pem: publicKeyPEM(t, &key.PublicKey),
		sign: func(input []byte) ([]byte, error) {
			digest := sha256.Sum256(input)
			return rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
		},
	}
}

// jwt is a signed compact JWT carrying claims.
func (s jwtSigner) jwt(t *testing.T, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding
	header, err := json.Marshal(map[string]string{"alg": s.alg, "typ": "JWT"})
	if err != nil {
		t.Fatalf("JWT header: %v", err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatalf("JWT claims: %v", err)
	}
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	sig, err := s.sign([]byte(input))
	if err != nil {
		t.Fatalf("sign JWT: %v", err)
	}
	return input + "." + enc.EncodeToString(sig)
}
