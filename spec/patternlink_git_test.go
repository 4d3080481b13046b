package spec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPatternLinksGitHooksPath: a link inside a protect entry WithAliases
// adds for git (the core.hooksPath directory a protected config names,
// .githooks/pre-commit -> ../tools/pre-commit, and a hook linked into an
// included config's hooks path) holds its target, as a link inside a
// configured protect entry does: PatternLinks and the plan's sandbox both
// protect tools/pre-commit; a workspace with no protected config adds
// nothing.
func TestPatternLinksGitHooksPath(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, tc := range []struct {
		name      string
		protected bool // the workspace's .git/config is protected
		want      []string
	}{
		{"hooks_path_protected", true, []string{"tools/pre-commit"}},
		{"config_not_protected", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			for p, s := range map[string]string{".git/config": "[core]\n\thooksPath = .githooks\n", "tools/pre-commit": "#!/bin/sh\n"} {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(ws, p), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Mkdir(filepath.Join(ws, ".githooks"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../tools/pre-commit", filepath.Join(ws, ".githooks/pre-commit")); err != nil {
				t.Fatal(err)
			}
			sb := &Sandbox{Root: ws}
			if tc.protected {
				sb.Protect = []string{filepath.Join(ws, ".git/config")}
			}
			_, protect, err := PatternLinks(sb)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, filepath.Join(ws, w))
			}
			if !slices.Equal(protect, want) {
				t.Fatalf("PatternLinks protect = %v; want %v", protect, want)
			}
			linked, err := withPatternLinks(sb, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range want {
				if !slices.Contains(WithAliases(linked).Protect, w) {
					t.Errorf("the plan's sandbox does not protect %s", w)
				}
			}
		})
	}
}
