package broker

import "testing"

func TestCheckGitConfig(t *testing.T) {
	ok := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = /src/repo\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
	if err := checkGitConfig([]byte(ok)); err != nil {
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
	} {
		if err := checkGitConfig([]byte(bad)); err == nil {
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
