package cordon_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// TestIntegrationGitConfigReadAsGit (third hostile review): the existing
// configs of a repository with a submodule are changed from the sandbox
// only as git reads them, not as a line with its spaces trimmed and its
// end quotes cut: a host's core.hooksPath or include.path given a
// trailing vertical tab or no-break space (git keeps both: another
// directory, which no rule protects), a submodule's core.worktree whose
// `."."` git reads as `..` (into the superproject's .git/hooks), and a
// URL whose quotes hide ext:: are refused with the config's path, and so
// is a submodule's core.worktree moved anywhere else (into the protected
// hooks path, where the host's next `git submodule update` would write
// the submodule's files; to the superproject's root; to a directory where
// a relative hooksPath names hooks nothing protects); the
// configs stay as they were, and the host's next commit and submodule
// status run nothing. Root, and rootless in hack/test-rootless.sh.
func TestIntegrationGitConfigReadAsGit(t *testing.T) {
	mark := gitHome(t)
	base := t.TempDir()
	sub, super, clone := filepath.Join(base, "sub"), filepath.Join(base, "super"), filepath.Join(base, "clone")
	git(t, base, "init", "-q", "-b", "main", sub)
	git(t, sub, "commit", "-q", "--allow-empty", "-m", "s")
	git(t, base, "init", "-q", "-b", "main", super)
	git(t, super, "submodule", "add", "-q", sub, "lib")
	git(t, super, "commit", "-q", "-m", "super")
	git(t, base, "clone", "-q", "--recurse-submodules", super, clone)
	git(t, clone, "config", "core.hooksPath", ".husky")
	git(t, clone, "config", "include.path", "local.inc")
	writeFile(t, filepath.Join(clone, ".husky", "README"), "hooks\n")
	writeFile(t, filepath.Join(clone, ".git", "local.inc"), "[user]\n\tname = Host Person\n")
	cfg, modCfg := filepath.Join(clone, ".git", "config"), filepath.Join(clone, ".git", "modules", "lib", "config")
	hook := "printf '#!/bin/sh\\ntouch " + mark + "\\n' > \"$d/pre-commit\" && chmod +x \"$d/pre-commit\""

	sb, err := gitSandbox(t, clone, func(s *spec.Sandbox) {
		s.Mounts = append(s.Mounts, spec.Mount{Source: sub, Target: sub, Readonly: true})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cfg, old, new, before, after string
	}{
		{"hooksPath with a trailing vertical tab", cfg, "hooksPath = .husky\n", "hooksPath = .husky\v\n", "",
			"d=$(printf '.husky\\v') && mkdir \"$d\" && " + hook},
		{"include.path with a trailing no-break space", cfg, "path = local.inc\n", "path = local.inc\u00a0\n", "",
			"printf '[core]\\n\\thooksPath = evil\\n' > \"$(printf '.git/local.inc\\302\\240')\" && d=evil && mkdir evil && " + hook},
		{"a submodule's core.worktree whose quoted dots git reads as ..", modCfg, "worktree = ../../../lib\n", "worktree = ../../../lib/.\".\"/.g\"i\"t/hooks\n",
			"mkdir -p 'lib/.\".\"/.g\"i\"t/hooks' && ", ""},
		{"a submodule's core.worktree in the protected hooks path", modCfg, "worktree = ../../../lib\n", "worktree = ../../../.husky\n", "", ""},
		{"a submodule's core.worktree at the superproject's root", modCfg, "worktree = ../../../lib\n", "worktree = ../../..\n", "", ""},
		{"a submodule's core.worktree moved to another directory", modCfg, "worktree = ../../../lib\n", "worktree = ../../../src\n",
			"mkdir -p src/.husky && ", ""},
		{"a submodule URL whose quotes hide ext::", cfg, "[include]", "[submodule \"x\"]\n\turl = \"e\"xt::sh -c touch% " + mark + "\n[include]", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, modBefore := hashOf(t, cfg), hashOf(t, modCfg)
			old, err := os.ReadFile(tc.cfg)
			if err != nil || !strings.Contains(string(old), tc.old) {
				t.Fatalf("%s holds no %q: %v\n%s", tc.cfg, tc.old, err, old)
			}
			staged := filepath.Join(clone, "new.cfg")
			writeFile(t, staged, strings.Replace(string(old), tc.old, tc.new, 1))
			script := tc.before + "mv new.cfg " + tc.cfg
			if tc.after != "" {
				script += " && " + tc.after
			}
			out := runGit(t, sb, clone, script)
			if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != tc.cfg {
				t.Errorf("want sandbox_denied on %s, got %+v %s", tc.cfg, out.res, out.stderr)
			}
			if hashOf(t, cfg) != before || hashOf(t, modCfg) != modBefore {
				t.Errorf("a config changed:\n%s", readOr(tc.cfg))
			}
			if _, err := os.Stat(staged); err != nil {
				t.Errorf("the refused file is gone: %v", err)
			}
			_ = os.Remove(staged)
		})
	}
	git(t, clone, "commit", "-q", "--allow-empty", "-m", "host")
	git(t, clone, "submodule", "status")
	if got := git(t, filepath.Join(clone, "lib"), "rev-parse", "--show-toplevel"); got != filepath.Join(clone, "lib")+"\n" {
		t.Errorf("the submodule's work tree is %q", got)
	}
	if _, err := os.Stat(mark); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the host's git ran a planted command (%v)", err)
	}
}

func readOr(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
