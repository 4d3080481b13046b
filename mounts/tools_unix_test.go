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
