//go:build linux || darwin

package hostfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenRefusesPlantedFiles: each thing a sandboxed command could have
// left at or above a report or log path is refused, and the file it points
// to is never created or changed (issue 9, items 1 to 3).
func TestOpenRefusesPlantedFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir, victim string) string // returns the path to open
		want  string
	}{
		{"symlink as the file", func(t *testing.T, dir, victim string) string {
			must(t, os.Symlink(victim, filepath.Join(dir, "report.json")))
			return filepath.Join(dir, "report.json")
		}, "symbolic link"},
		{"symlinked folder", func(t *testing.T, dir, victim string) string {
			must(t, os.Symlink(filepath.Dir(victim), filepath.Join(dir, "logs")))
			return filepath.Join(dir, "logs", filepath.Base(victim))
		}, "goes through the symbolic link"},
		{"symlinked folder, relative path", func(t *testing.T, dir, victim string) string {
			must(t, os.Symlink(filepath.Dir(victim), filepath.Join(dir, "logs")))
			t.Chdir(dir)
			return filepath.Join("logs", filepath.Base(victim))
		}, "goes through the symbolic link"},
		{"FIFO", func(t *testing.T, dir, _ string) string {
			must(t, syscall.Mkfifo(filepath.Join(dir, "report.json"), 0o644))
			return filepath.Join(dir, "report.json")
		}, "not a regular file"},
		{"directory", func(t *testing.T, dir, _ string) string {
			must(t, os.Mkdir(filepath.Join(dir, "report.json"), 0o755))
			return filepath.Join(dir, "report.json")
		}, "not a regular file"},
		{"hard link", func(t *testing.T, dir, victim string) string {
			must(t, os.Link(victim, filepath.Join(dir, "report.json")))
			return filepath.Join(dir, "report.json")
		}, "hard links"},
	} {
		for _, appendOnly := range []bool{false, true} {
			t.Run(tc.name, func(t *testing.T) {
				dir, other := t.TempDir(), t.TempDir()
				victim := filepath.Join(other, "victim")
				must(t, os.WriteFile(victim, []byte("keep"), 0o644))
				path := tc.setup(t, dir, victim)
				f, err := Open(path, appendOnly, 0o600)
				if err == nil {
					f.Close()
					t.Fatalf("opened %s", path)
				}
				if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v; want ErrUnsafe with %q", err, tc.want)
				}
				if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
					t.Fatalf("victim is now %q (%v)", b, err)
				}
			})
		}
	}
}

// TestOpenWritesRegularFiles: a missing file is created with the mode, an
// existing one is truncated (or appended to), and folders without links
// are walked, relative or absolute.
func TestOpenWritesRegularFiles(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	p := filepath.Join(dir, "a", "b", "r.json")
	for i, want := range []string{"one", "two"} {
		f, err := Open(p, false, 0o640)
		must(t, err)
		_, err = f.WriteString(want)
		must(t, err)
		must(t, f.Close())
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Fatalf("write %d: file is %q", i, b)
		}
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640&^umask() {
		t.Errorf("mode %v", fi.Mode())
	}
	t.Chdir(filepath.Join(dir, "a"))
	f, err := Open("../a/./b/r.json", true, 0o600)
	must(t, err)
	_, err = f.WriteString("+")
	must(t, err)
	must(t, f.Close())
	if b, _ := os.ReadFile(p); string(b) != "two+" {
		t.Fatalf("append: file is %q", b)
	}
	if _, err := Open(filepath.Join(dir, "missing", "r.json"), false, 0o600); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing folder: %v", err)
	}
}

func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesLinksInFoldersTheCallerOwns: a sandbox runs as the caller,
// so it can plant a link in a folder and then make the folder read-only
// (mkdir out; ln -s ~/x out/logs; chmod 555 out). The link is refused and
// nothing is created where it points, for root and rootless alike (review
// of issue 9, item 3: the rule looked only at whether the caller could
// write the folder now). Runs as root in make unit and unprivileged in
// hack/test-rootless.sh.
func TestOpenRefusesLinksInFoldersTheCallerOwns(t *testing.T) {
	dir, target := t.TempDir(), t.TempDir()
	sealed := filepath.Join(dir, "sealed")
	must(t, os.Mkdir(sealed, 0o755))
	must(t, os.Symlink(target, filepath.Join(sealed, "link")))
	must(t, os.Chmod(sealed, 0o555))
	t.Cleanup(func() { _ = os.Chmod(sealed, 0o755) })
	if _, err := Open(filepath.Join(sealed, "link", "r.json"), false, 0o600); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("a link in a folder the caller owns was followed: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(target, "r.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file was created where the link points: %v", err)
	}
}

// TestOpenFollowsLinksInFoldersOfOthers: a link in a folder of another user
// that the caller cannot write (no sandbox of the caller could have made
// it), here the merged-/usr /lib -> usr/lib in root's /, is followed; run
// as root every folder is writable, so it is refused.
func TestOpenFollowsLinksInFoldersOfOthers(t *testing.T) {
	if fi, err := os.Lstat("/lib"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Skip("/lib is not a symbolic link on this host")
	}
	if target, err := os.Readlink("/lib"); err != nil || strings.Count(strings.Trim(target, "/"), "/") != 1 {
		t.Skip("/lib does not point two levels down (usr/lib)")
	}
	dir := t.TempDir()
	// Walked by components: /lib is followed to /usr/lib, then ../.. is /.
	via := "/lib/../.." + filepath.Join(dir, "r.json")
	f, err := Open(via, false, 0o600)
	if os.Geteuid() == 0 {
		if !errors.Is(err, ErrUnsafe) {
			t.Fatalf("as root a link was followed: %v", err)
		}
		return
	}
	must(t, err)
	must(t, f.Close())
	if _, err := os.Stat(filepath.Join(dir, "r.json")); err != nil {
		t.Fatal(err)
	}
}
