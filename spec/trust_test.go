package spec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	_, err := DiscoverTrusted(sub)
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), cfg+" changed since you trusted it (+1 -0 lines)") {
		t.Fatalf("changed config: want ErrUntrusted saying what changed, got %v", err)
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
	if !slices.Contains(sb.Deny, TrustStorePath()) || !slices.Contains(sb.Deny, TrustCopiesDir()) {
		t.Fatalf("trust store or its copies not denied: %v", sb.Deny)
	}
	// A config never trusted is not "changed".
	if _, err := DiscoverTrusted(sub); err == nil || strings.Contains(err.Error(), "changed since") || !strings.Contains(err.Error(), "found "+planted) {
		t.Fatalf("planted config: %v", err)
	}
}

// TestLineDiff counts the lines a change added and removed.
func TestLineDiff(t *testing.T) {
	for _, tc := range []struct {
		a, b           string
		added, removed int
	}{
		{"a\nb\n", "a\nb\n", 0, 0},
		{"a\nb\n", "a\nb\nc\n", 1, 0},
		{"a\nb\nc\n", "a\nc\n", 0, 1},
		{"a\nb\nc\n", "a\nB\nc\n", 1, 1},
		{"", "x\ny\n", 2, 0},
	} {
		if ad, rm := lineDiff(tc.a, tc.b); ad != tc.added || rm != tc.removed {
			t.Errorf("lineDiff(%q, %q) = +%d -%d, want +%d -%d", tc.a, tc.b, ad, rm, tc.added, tc.removed)
		}
	}
}

// TestTrustStoreNeverThroughALink: the trust store is appended to only as a
// regular file: a link or FIFO at its path (planted where a sandbox could
// write) is refused and its target untouched, and the append never blocks.
func TestTrustStoreNeverThroughALink(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, ProjectConfigName)
	if err := os.WriteFile(cfg, []byte("sandbox:\n  root: .\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "trusted")
	t.Setenv("CORDON_TRUST_FILE", store)
	if err := os.Symlink(victim, store); err != nil {
		t.Fatal(err)
	}
	if err := Trust(cfg); err == nil {
		t.Fatal("trusted through a link")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("victim is now %q", b)
	}
	fifo := filepath.Join(t.TempDir(), "trusted")
	t.Setenv("CORDON_TRUST_FILE", fifo)
	if err := syscallMkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	if err := Trust(cfg); err == nil {
		t.Fatal("trusted into a FIFO")
	}
}

// TestPlantedFIFOConfigNeverBlocks: a FIFO planted as cordon.yaml (or as a
// worker file) makes discovery and loading fail with a reason, never hang.
func TestPlantedFIFOConfigNeverBlocks(t *testing.T) {
	t.Setenv("CORDON_TRUST_FILE", filepath.Join(t.TempDir(), "trusted"))
	dir := t.TempDir()
	cfg := filepath.Join(dir, ProjectConfigName)
	if err := syscallMkfifo(cfg); err != nil {
		t.Fatal(err)
	}
	if p, _ := DiscoverTrusted(dir); p != "" {
		t.Errorf("a FIFO config was discovered: %s", p)
	}
	if _, err := Load(cfg); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Load: %v", err)
	}
	if _, err := LoadWorker(cfg); err == nil {
		t.Error("LoadWorker read a FIFO")
	}
}

// TestRevokeRemovesTrustedCopies: cordon trust --revoke leaves nothing of
// the config behind: the copies kept for "changed since you trusted it"
// go with the last record naming their content, and a copy another
// trusted config still names stays.
func TestRevokeRemovesTrustedCopies(t *testing.T) {
	t.Setenv("CORDON_TRUST_FILE", filepath.Join(t.TempDir(), "trusted"))
	a, b := filepath.Join(t.TempDir(), ProjectConfigName), filepath.Join(t.TempDir(), ProjectConfigName)
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("sandbox:\n  root: .\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Trust(p); err != nil {
			t.Fatal(err)
		}
	}
	copies := func() []string {
		entries, _ := os.ReadDir(TrustCopiesDir())
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	if len(copies()) != 1 {
		t.Fatalf("two trusted configs of one content: copies %v, want one", copies())
	}
	if n, err := Revoke(a); n != 1 || err != nil {
		t.Fatalf("Revoke(a) = %d, %v", n, err)
	}
	if len(copies()) != 1 {
		t.Fatalf("b still names the content: copies %v, want it kept", copies())
	}
	if n, err := Revoke(b); n != 1 || err != nil {
		t.Fatalf("Revoke(b) = %d, %v", n, err)
	}
	if left := copies(); len(left) != 0 {
		t.Errorf("revoked every trust: copies %v left", left)
	}
}
