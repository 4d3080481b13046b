package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestVerifyMovedDirectory checks the Linux belt-and-braces check: a held
// directory that was moved no longer verifies as the path it was opened by.
func TestVerifyMovedDirectory(t *testing.T) {
	base := t.TempDir()
	mkTree(t, base, "dir ws/a")
	root, rootPath, err := openEntryRoot(&Entry{Source: filepath.Join(base, "ws")})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if rootPath != filepath.Join(base, "ws") {
		t.Fatalf("root path %q", rootPath)
	}
	dir, err := descend(root, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if err := verify(dir, rootPath, "a"); err != nil {
		t.Fatalf("verify before the move: %v", err)
	}
	if err := os.Rename(filepath.Join(base, "ws/a"), filepath.Join(base, "ws/b")); err != nil {
		t.Fatal(err)
	}
	var ce *changedError
	if err := verify(dir, rootPath, "a"); !errors.As(err, &ce) {
		t.Fatalf("verify after the move = %v, want a changedError", err)
	}
}
