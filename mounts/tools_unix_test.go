//go:build unix

package mounts

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestReadRefusesSpecialFiles checks that Read does not open a FIFO (which
// would block) or follow a device node.
func TestReadRefusesSpecialFiles(t *testing.T) {
	base := t.TempDir()
	mkTree(t, base, "dir ws")
	fifo := filepath.Join(base, "ws", "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		skipUnlessCI(t, "cannot make a FIFO here: "+err.Error())
	}
	tab, err := New(&spec.Sandbox{Root: filepath.Join(base, "ws")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tab.Read("fifo", 0)
	wantErr(t, err, ErrNotFile)
	err = tab.Write("fifo", "x")
	wantErr(t, err, ErrNotFile)
}

// TestReadFileMount checks that a file mounted on its own (an attachment)
// is read at its target with the mount's suffix and size rules, that a
// directory mount root is still refused, and that a FIFO mounted on its
// own is not opened.
func TestReadFileMount(t *testing.T) {
	base := t.TempDir()
	mkTree(t, base, "dir ws", "file src/notes.md # notes", "file src/big.md 0123456789", "dir srcdir")
	ws := filepath.Join(base, "ws")
	fifo := filepath.Join(base, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		skipUnlessCI(t, "cannot make a FIFO here: "+err.Error())
	}
	tab, err := New(&spec.Sandbox{Root: ws, Mounts: []spec.Mount{
		{Source: filepath.Join(base, "src", "notes.md"), Target: "/att/notes.md", Readonly: true},
		{Source: filepath.Join(base, "src", "notes.md"), Target: "/att/notes.txt", Readonly: true, Suffixes: []string{".md"}},
		{Source: filepath.Join(base, "src", "big.md"), Target: "/att/big.md", Readonly: true, MaxFileBytes: 4},
		{Source: filepath.Join(base, "srcdir"), Target: "/att/dir", Readonly: true},
		{Source: fifo, Target: "/att/fifo", Readonly: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tab.Read("/att/notes.md", 0); err != nil || got != "# notes" {
		t.Fatalf("Read(file mount) = %q, %v; want the file's text", got, err)
	}
	if got, err := tab.Read("/att/notes.md", 3); err != nil || got != "# n\n[cordon: cut after 3 characters; the file has 7 bytes]" {
		t.Fatalf("Read(file mount, 3) = %q, %v; want it cut", got, err)
	}
	for path, want := range map[string]error{"/att/notes.txt": ErrSuffix, "/att/big.md": ErrTooLarge, "/att/dir": ErrNotFile, "/att/fifo": ErrNotFile} {
		got, err := tab.Read(path, 0)
		wantErr(t, err, want)
		if got != "" {
			t.Errorf("Read(%s) returned %q with its error", path, got)
		}
	}
}
