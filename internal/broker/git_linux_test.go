package broker

import (
	"strings"
	"testing"
)

func TestCheckGitConfig(t *testing.T) {
	ok := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = /src/repo\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
	if err := checkGitConfig([]byte(ok), "/w/c/.git/config"); err != nil {
		t.Fatalf("git clone's config refused: %v", err)
	}
	for _, bad := range []string{
		"[core]\n\tfsmonitor = touch /tmp/x\n",
		"[core]\n\thooksPath = /tmp\n",
		"[alias]\n\tst = !sh\n",
		"[include]\n\tpath = ../x\n",
		"[includeIf \"gitdir:/\"]\n\tpath = x\n",
		"[remote \"o\"]\n\turl = ext::sh -c x\n",
		"[core]\n\tbare = \\\nfalse\n",
		"[core] fsmonitor = x\n",
		"[core.x]\n\tbare = false\n",
		"[filter \"lfs\"]\n\tclean = x\n",
		"[core]\n\tworktree = /home/u\n",
		"[core]\n\tworktree = ../..\n",
		"[core]\n\tworktree = hooks\n",
		"[core]\n\tworktree = ..\n", // no sandbox root: every core.worktree
	} {
		if err := checkGitConfig([]byte(bad), "/w/c/.git/config"); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	for rule, tc := range map[string]struct {
		p   string
		dir bool
		ok  bool
	}{
		"protect /w/**/.git/hooks": {"/w/a/.git/hooks", true, true},
		"protect /w/.git/hooks":    {"/w/.git/hooks/pre-commit.sample", false, true},
		"protect /w/.git/config":   {"/w/.git/config", false, false},
		"deny /w/**/hooks":         {"/w/hooks", true, false},
	} {
		if got := templateAllowed(rule, tc.p, tc.dir); got != tc.ok {
			t.Errorf("templateAllowed(%s, %s) = %v", rule, tc.p, got)
		}
	}
	if templateAllowed("protect /w/.git/hooks", "/w/.git/hooks/pre-commit", false) {
		t.Error("a hook by its real name was let through")
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

func TestBareRelevant(t *testing.T) {
	for _, tc := range []struct {
		p    string
		want bool
	}{
		{"/w/src/HEAD", true}, {"/w/src/objects", true}, {"/w/src/refs", true},
		{"/w/src/config", true}, {"/w/src/commondir", true}, {"/w/src/config.worktree", true},
		{"/w/src/hooks", true}, {"/w/src/hooks/pre-commit", true}, {"/hooks/x", true},
		{"/w/src/main.go", false}, {"/w/src/myhooks/x", false}, {"/w/hooks.d/x", false},
		{"/w/src/HEAD.lock", false}, {"/w/src/config.lock", false},
	} {
		if got := bareRelevant(tc.p); got != tc.want {
			t.Errorf("bareRelevant(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}
