package spec

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"testing"
)

// walkSecretsByPath is the walk walkHostSecrets did before it looked names
// up relative to an open folder: filepath.WalkDir and an lstat of each
// full path. The test holds the new walk to its answer.
func walkSecretsByPath(root string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root || !(d.IsDir() || d.Type().IsRegular()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		perm := fi.Mode().Perm()
		if perm&0o004 == 0 || (d.IsDir() && perm&0o001 == 0) {
			out = append(out, p)
			if d.IsDir() {
				return fs.SkipDir
			}
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func walkSecrets(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	fd, err := syscall.Open(root, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	walkSecretDir(fd, root, func(p string) { out = append(out, p) })
	sort.Strings(out)
	return out
}

// TestWalkSecretDir: the walk finds exactly what a walk by full paths
// finds, on this host's /etc and on a tree of every case: files and
// folders others may not read, a folder others may read but not search
// (listed whole, nothing below it), symbolic links, a FIFO and a socket of
// mode 0600 (not listed), a readable folder deep down.
func TestWalkSecretDir(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string, mode os.FileMode) {
		p := filepath.Join(dir, rel)
		var err error
		if mode.IsDir() {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, nil, 0o644)
		}
		if err == nil {
			err = os.Chmod(p, mode.Perm())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("open", fs.ModeDir|0o755)
	mk("open/key", 0o600)
	mk("open/pub", 0o644)
	mk("open/exec-only", 0o711)
	mk("open/deep", fs.ModeDir|0o755)
	mk("open/deep/deeper", fs.ModeDir|0o755)
	mk("open/deep/deeper/token", 0o640)
	mk("open/deep/deeper/ok", 0o444)
	mk("listable", fs.ModeDir|0o754)
	mk("private", fs.ModeDir|0o700)
	mk("private/x", 0o644)
	mk("top", 0o400)
	for _, l := range [][2]string{{"open/key", "link-to-key"}, {"private", "open/link-to-private"}} {
		if err := os.Symlink(filepath.Join(dir, l[0]), filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "open/fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{dir + "/listable", dir + "/open/deep/deeper/token", dir + "/open/exec-only", dir + "/open/key", dir + "/private", dir + "/top"}
	if got := walkSecrets(t, dir); !slices.Equal(got, want) {
		t.Errorf("walk of the test tree =\n%q\nwant\n%q", got, want)
	}
	if got, ref := walkSecrets(t, dir), walkSecretsByPath(dir); !slices.Equal(got, ref) {
		t.Errorf("walk of the test tree =\n%q\nthe walk by full paths\n%q", got, ref)
	}
	for _, root := range hostSecretRoots {
		if _, err := os.Lstat(root); err != nil {
			continue
		}
		if got, ref := walkSecrets(t, root), walkSecretsByPath(root); !slices.Equal(got, ref) {
			t.Errorf("walk of %s =\n%q\nthe walk by full paths\n%q", root, got, ref)
		}
	}
}

// BenchmarkWalkSecrets compares the walk of /etc with the walk by full
// paths: go test -run - -bench WalkSecrets ./spec/.
func BenchmarkWalkSecrets(b *testing.B) {
	b.Run("fstatat", func(b *testing.B) {
		for range b.N {
			walkSecrets(b, "/etc")
		}
	})
	b.Run("fullpath", func(b *testing.B) {
		for range b.N {
			walkSecretsByPath("/etc")
		}
	})
}
