//go:build unix

package decide

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func openDir(t *testing.T, p string) FD {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return FD{Dirfd: fd}
}

// TestLocksOncePerDirectory: a call that decides twice in one directory,
// through two descriptors of it (the file tools' two walks), holds its
// lock once: a second flock of the inode by this process would wait for
// itself and fail with ErrBusy. Release lets another call take it.
func TestLocksOncePerDirectory(t *testing.T) {
	dir := t.TempDir()
	l := Lock()
	if err := l.Add(openDir(t, dir)); err != nil {
		t.Fatal(err)
	}
	if err := l.Add(openDir(t, dir)); err != nil {
		t.Fatalf("the same directory again, through another descriptor: %v", err)
	}
	if !l.Held(openDir(t, dir)) || l.Count() != 1 {
		t.Fatalf("held %v, count %d; want the directory held once", l.Held(openDir(t, dir)), l.Count())
	}
	if err := l.Add(emptyTestDir{}); err == nil {
		t.Error("a Dir that is no directory descriptor was taken as locked")
	}
	l.Release()
	l.Release()
	m := Lock()
	defer m.Release()
	if err := m.Add(openDir(t, dir)); err != nil {
		t.Fatalf("after Release: %v", err)
	}
}

// TestShapeDir: a name in a hooks directory (any case) is decided, and
// locked, on the directory holding hooks; any other on its own.
func TestShapeDir(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "r/HOOKS"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := openDir(t, filepath.Join(root, "r"))
	hooks := openDir(t, filepath.Join(root, "r/HOOKS"))
	hooks.Up = func() (Dir, error) { return r, nil }
	for _, tc := range []struct {
		d    FD
		p    string
		want FD
	}{
		{r, "/w/r/refs", r}, {r, "/w/r/hooks", r}, {hooks, "/w/r/HOOKS/pre-commit", r}, {hooks, "/w/r/HOOKS/HEAD", r},
	} {
		got, err := ShapeDir(tc.d, tc.p)
		if err != nil || got.(FD).Dirfd != tc.want.Dirfd {
			t.Errorf("ShapeDir(%s) = %v, %v; want fd %d", tc.p, got, err, tc.want.Dirfd)
		}
	}
}

type emptyTestDir struct{ FD }

func (emptyTestDir) Lstat(string) (Entry, error) { return Entry{Dev: 1, Ino: 1}, nil }
