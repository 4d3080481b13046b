package spec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDiscoverTrusted is the security property "a planted project config
// never takes effect": a discovered cordon.yaml is used only once trusted,
// and any change to it (as a sandboxed command would make) ends the trust.
func TestDiscoverTrusted(t *testing.T) {
	t.Setenv("CORDON_TRUST_FILE", filepath.Join(t.TempDir(), "trusted"))
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := DiscoverTrusted(sub); p != "" || err != nil {
		t.Fatalf("no config: got %q %v", p, err)
	}
	cfg := filepath.Join(dir, ProjectConfigName)
	if err := os.WriteFile(cfg, []byte("sandbox:\n  root: .\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DiscoverTrusted(sub); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("untrusted config: want ErrUntrusted, got %v", err)
	}
	if err := Trust(cfg); err != nil {
		t.Fatal(err)
	}
	if p, err := DiscoverTrusted(sub); p != cfg || err != nil {
		t.Fatalf("trusted config: got %q %v", p, err)
	}
	// A change (say, protect: [] written from inside a sandbox) ends it.
	if err := os.WriteFile(cfg, []byte("sandbox:\n  root: .\n  protect: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DiscoverTrusted(sub); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("changed config: want ErrUntrusted, got %v", err)
	}
	// A config planted in a subfolder is found first and is not trusted.
	if err := Trust(cfg); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(sub, ProjectConfigName)
	if err := os.WriteFile(planted, []byte("sandbox:\n  root: .\n  network: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DiscoverTrusted(sub); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("planted config: want ErrUntrusted, got %v", err)
	}
	// Every sandbox denies the trust store.
	sb := &Sandbox{Root: dir}
	GuardTrustStore(sb)
	if !slices.Contains(sb.Deny, TrustStorePath()) {
		t.Fatalf("trust store not denied: %v", sb.Deny)
	}
}
