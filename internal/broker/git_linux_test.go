package broker

import (
	"strings"
	"testing"
)

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
