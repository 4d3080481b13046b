package decide

import (
	"errors"
	"testing"
)

// refuseAll is a writer's resolver that resolves nothing.
func refuseAll(string) (Resolved, error) { return Resolved{}, errors.New("no resolution here") }

func TestGitConfig(t *testing.T) {
	ok := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = /src/repo\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
	if err := GitConfig([]byte(ok), "/w/c/.git/config", Rules{}); err != nil {
		t.Fatalf("git clone's config refused: %v", err)
	}
	for _, bad := range []string{
		"[core]\n\tfsmonitor = touch /tmp/x\n",
		"[core]\n\thooksPath = /tmp\n",
		"[alias]\n\tst = !sh\n",
		"[include]\n\tpath = ../x\n",
		"[includeIf \"gitdir:/\"]\n\tpath = x\n",
		"[remote \"o\"]\n\turl = ext::sh -c x\n",
		"[remote \"o\"]\n\turl = \"e\"xt::sh -c x\n",
		"[remote \"o\"]\n\turl = \\\nfd::3\n",
		"[core]\n\tbare = false\n[core]\tpager = x\n",
		"[core] fsmonitor = x\n",
		"[core.x]\n\tbare = false\n",
		"[filter \"lfs\"]\n\tclean = x\n",
		"[core]\n\tworktree = /home/u\n",
		"[core]\n\tworktree = ../..\n",
		"[core]\n\tworktree = hooks\n",
	} {
		if err := GitConfig([]byte(bad), "/w/c/.git/config", Rules{Resolve: refuseAll}); err == nil {
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
		if got := TemplateAllowed(rule, tc.p, tc.dir); got != tc.ok {
			t.Errorf("TemplateAllowed(%s, %s) = %v", rule, tc.p, got)
		}
	}
	if TemplateAllowed("protect /w/.git/hooks", "/w/.git/hooks/pre-commit", false) {
		t.Error("a hook by its real name was let through")
	}
}

func TestRelevant(t *testing.T) {
	for _, tc := range []struct {
		p    string
		want bool
	}{
		{"/w/src/HEAD", true}, {"/w/src/objects", true}, {"/w/src/refs", true},
		{"/w/src/config", true}, {"/w/src/commondir", true}, {"/w/src/config.worktree", true},
		{"/w/src/hooks", true}, {"/w/src/hooks/pre-commit", true}, {"/hooks/x", true},
		{"/w/src/main.go", false}, {"/w/src/myhooks/x", false}, {"/w/hooks.d/x", false},
		{"/w/src/HEAD.lock", false}, {"/w/src/config.lock", false},
		{"/w/src/head", true}, {"/w/src/Objects", true}, {"/w/src/HOOKS/x", true}, {"/w/src/Makefile", false},
	} {
		if got := Relevant(tc.p); got != tc.want {
			t.Errorf("Relevant(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}
