package cachedir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestEnsureRefusesForeignFolder: a cache folder that others can write
// (or a symlink in its place) is refused with ErrNotOwned, not used;
// CORDON_CACHE_DIR set means no fallback.
func TestEnsureRefusesForeignFolder(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"group-writable folder", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o770); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlinked cache", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(t.TempDir(), filepath.Join(dir, "go")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "caches")
			tt.setup(t, dir)
			t.Setenv("CORDON_CACHE_DIR", dir)
			got, err := Ensure([]string{"go"})
			if !errors.Is(err, ErrNotOwned) || got != "" {
				t.Fatalf("Ensure = %q, %v; want ErrNotOwned", got, err)
			}
		})
	}
}

// TestEnsureListClear: Ensure makes private folders; List sums their
// files; Clear removes one cache, Go's read-only module folders included,
// without following a symlink a sandbox planted to a file outside.
func TestEnsureListClear(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "caches")
	t.Setenv("CORDON_CACHE_DIR", dir)
	got, err := Ensure([]string{"go", "npm"})
	if err != nil || got != dir {
		t.Fatalf("Ensure = %q, %v", got, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "go")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("go cache folder: %v %v", fi, err)
	}
	mod := filepath.Join(dir, "go", "mod", "example.com", "dep@v1.0.0")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "dep.go"), []byte("package dep\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "keep")
	if err := os.WriteFile(outside, []byte("host"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(mod, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(mod, 0o555); err != nil {
		t.Fatal(err)
	}
	list, err := List(dir)
	if err != nil || len(list) != 2 || list[0].Name != "go" || list[0].Size != int64(len("package dep\n")) || list[1].Name != "npm" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if err := Clear(dir, "maven"); !errors.Is(err, ErrUnknownCache) {
		t.Errorf("Clear(maven) = %v, want ErrUnknownCache", err)
	}
	if err := Clear(dir, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "go")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("go cache still there: %v", err)
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("the file the planted link names changed: %v %v", fi, err)
	}
	if list, _ := List(dir); len(list) != 1 || list[0].Name != "npm" {
		t.Errorf("after clear: %+v", list)
	}
	if err := Clear(dir); err != nil {
		t.Fatal(err)
	}
	if list, _ := List(dir); len(list) != 0 {
		t.Errorf("after clearing all: %+v", list)
	}
}
