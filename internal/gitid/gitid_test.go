package gitid

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRead: only user.name and user.email, from the global config (an
// includeIf "gitdir:" that matches the directory applies), never the
// repository's own.
func TestRead(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	home, repo := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.Unsetenv("GIT_CONFIG_GLOBAL")
	write(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Host\n\temail = host@example.com\n[core]\n\thooksPath = /x\n"+
		"[includeIf \"gitdir:"+repo+"/\"]\n\tpath = "+home+"/work.gitconfig\n")
	write(t, filepath.Join(home, "work.gitconfig"), "[user]\n\temail = work@example.com\n")
	if got := Read(home); got != (Identity{"Host", "host@example.com"}) {
		t.Errorf("Read outside the repository = %+v", got)
	}
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	if out, err := exec.Command("git", "-C", repo, "config", "user.name", "Repo").CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	if got := Read(repo); got != (Identity{"Host", "work@example.com"}) {
		t.Errorf("Read in the repository = %+v", got)
	}
}

func TestConfig(t *testing.T) {
	got, err := Config(Identity{`A "B" \C`, "a@b"}, "/etc/gitconfig")
	if err != nil {
		t.Fatal(err)
	}
	if want := "[include]\n\tpath = \"/etc/gitconfig\"\n[user]\n\tname = \"A \\\"B\\\" \\\\C\"\n\temail = \"a@b\"\n"; !strings.HasSuffix(string(got), want) {
		t.Errorf("Config = %q, want it to end in %q", got, want)
	}
	for _, bad := range []Identity{{"a\n[core]\n\thooksPath = /x", "a@b"}, {"a", "a@b\x00"}, {"a", "a\r@b"}} {
		if _, err := Config(bad, ""); !errors.Is(err, ErrIdentity) {
			t.Errorf("Config(%q) = %v, want ErrIdentity", bad, err)
		}
	}
}

// TestFile: written read-only in a directory of the caller's alone, reused
// when its content is the same; a cache directory that is a symlink is
// never written through.
func TestFile(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("TMPDIR", t.TempDir())
	p, err := File([]byte("[user]\n\tname = \"a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode().Perm() != 0o444 || filepath.Dir(p) != filepath.Join(cache, "cordon", "git") {
		t.Fatalf("File = %s %v %v", p, fi, err)
	}
	if q, err := File([]byte("[user]\n\tname = \"a\"\n")); err != nil || q != p {
		t.Errorf("again: %s %v", q, err)
	}
	evil, elsewhere := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CACHE_HOME", evil)
	if err := os.Mkdir(filepath.Join(evil, "cordon"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(evil, "cordon", "git")); err != nil {
		t.Fatal(err)
	}
	q, err := File([]byte("x"))
	if err != nil || strings.HasPrefix(q, evil) {
		t.Errorf("File through a symlinked directory: %s %v", q, err)
	}
	if es, _ := os.ReadDir(elsewhere); len(es) != 0 {
		t.Errorf("written through the symlink: %v", es)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
