package broker

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCheckWorktree(t *testing.T) {
	for _, tc := range []struct {
		val, cfg string
		ok       bool
	}{
		{"../../../lib", "/w/app/.git/modules/lib/config", true},
		{"../../../../../lib/sub", "/w/app/.git/modules/lib/modules/sub/config", true},
		{"/w/app/lib", "/w/app/.git/modules/lib/config", true},
		{"..", "/w/app/.git/config", true},
		{"../../../.git/hooks", "/w/app/.git/modules/lib/config", false},
		{"../../../../etc", "/w/app/.git/modules/lib/config", false},
		{"/home/u", "/w/app/.git/modules/lib/config", false},
		{"../../../../app2", "/w/app/.git/modules/lib/config", false},
		{"x", "/w/app/config", false},
	} {
		if err := checkWorktree(tc.val, tc.cfg); (err == nil) != tc.ok {
			t.Errorf("checkWorktree(%q, %q) = %v, want ok %v", tc.val, tc.cfg, err, tc.ok)
		}
	}
}

func TestGitFileComplete(t *testing.T) {
	for in, want := range map[string]bool{
		"":                    false,
		"gitd":                false,
		"gitdir: ../x":        false,
		"gitdir: ../x\n":      true,
		"x":                   true,
		"hello world":         true,
		"gitdir: ../.git/m\n": true,
	} {
		if got := gitFileComplete([]byte(in)); got != want {
			t.Errorf("gitFileComplete(%q) = %v", in, got)
		}
	}
}

// globPolicy refuses what lies at or below one of its prefixes, or under a
// ".git/modules/" anywhere (as **/.git/modules/** rules do).
type globPolicy []string

func (p globPolicy) Refuse(path string) string {
	if strings.Contains(path, "/.git/modules/") {
		return "protect **/.git/modules/**"
	}
	for _, pre := range p {
		if path == pre || strings.HasPrefix(path, pre+"/") {
			return "protect " + pre
		}
	}
	return ""
}

func TestCheckGitFile(t *testing.T) {
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	b := &Broker{policy: globPolicy{"/nonexistent-w/.git/worktrees"}}
	for _, tc := range []struct {
		p, data string
		ok      bool
	}{
		{"/nonexistent-w/app/lib/.git", "gitdir: ../.git/modules/lib\n", true},
		{"/nonexistent-w/wt/.git", "gitdir: /nonexistent-w/.git/worktrees/wt\n", true},
		{"/nonexistent-w/app/.git", "not a redirect", true},
		{"/nonexistent-w/app/.git", "gitdir: ../evil\n", false},
		{"/nonexistent-w/app/.git", "gitdir: /tmp/x\n", false},
		{"/nonexistent-w/app/lib/.git", "gitdir: ../.git/modules/../../evil\n", false},
		{"/nonexistent-w/app/.git", "gitdir: \n", false},
	} {
		if err := b.checkGitFile(root, tc.p, []byte(tc.data)); (err == nil) != tc.ok {
			t.Errorf("checkGitFile(%s, %q) = %v, want ok %v", tc.p, tc.data, err, tc.ok)
		}
	}
}

func TestGitProbeSymlink(t *testing.T) {
	for _, tc := range []struct {
		p, target string
		ok        bool
	}{
		{"/w/.git/modules/lib/t8wubrG", "testing", true},
		{"/w/.git/worktrees/wt/tX", "testing", true},
		{"/w/.git/modules", "testing", false},
		{"/w/.git/modules/lib", "../../../evil", false},
		{"/w/.git/modules/lib", "/tmp/evil", false},
		{"/w/sub/.git", "testing", false},
		{"/w/.git/modules/lib/x", "a/../../../evil", false},
	} {
		if got := gitProbeSymlink(tc.p, tc.target); got != tc.ok {
			t.Errorf("gitProbeSymlink(%s, %s) = %v", tc.p, tc.target, got)
		}
	}
}
