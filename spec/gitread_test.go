package spec

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReadGitConfig: a config unchanged since it was read is not read
// again (the same bytes come back); one rewritten in place with the same
// size, replaced by a rename, or removed is read again, and so is one
// changed within gitRacyWindow of the read.
func TestReadGitConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(want string) []byte {
		t.Helper()
		b, err := readGitConfig(cfg)
		if err != nil || string(b) != want {
			t.Fatalf("readGitConfig = %q, %v; want %q", b, err, want)
		}
		return b
	}
	write("[core]\n\tpager = a\n")
	read("[core]\n\tpager = a\n")
	write("[core]\n\tpager = b\n") // same size, within the racy window
	read("[core]\n\tpager = b\n")
	time.Sleep(2 * gitRacyWindow)
	first := read("[core]\n\tpager = b\n")
	if again := read("[core]\n\tpager = b\n"); &again[0] != &first[0] {
		t.Errorf("an unchanged config was read again")
	}
	write("[core]\n\tpager = c\n")
	read("[core]\n\tpager = c\n")
	time.Sleep(2 * gitRacyWindow)
	read("[core]\n\tpager = c\n")
	tmp := cfg + ".new"
	if err := os.WriteFile(tmp, []byte("[core]\n\tpager = d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, cfg); err != nil {
		t.Fatal(err)
	}
	read("[core]\n\tpager = d\n")
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	if b, err := readGitConfig(cfg); err == nil {
		t.Errorf("a removed config read as %q", b)
	}
}
