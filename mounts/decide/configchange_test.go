package decide

import (
	"errors"
	"strings"
	"testing"
)

// dirResolver resolves a path to itself, cleaned, when every name of it
// is in dirs: a tree without symlinks.
func dirResolver(dirs ...string) Resolver {
	return func(p string) (Resolved, error) {
		c := cleanAbs(p)
		for _, d := range dirs {
			if d == c {
				return Resolved{Path: c}, nil
			}
		}
		return Resolved{}, errors.New("not in the tree")
	}
}

func cleanAbs(p string) string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, c)
		}
	}
	return "/" + strings.Join(out, "/")
}

// guard is a writer's rules that protect /w/.githooks and /w/.vscode.
func guard(p string) string {
	for _, g := range []string{"/w/.githooks", "/w/.vscode"} {
		if p == g || strings.HasPrefix(p, g+"/") {
			return "protect " + g
		}
	}
	return ""
}

func TestGitConfigChange(t *testing.T) {
	const host = "[core]\n\trepositoryformatversion = 0\n\thooksPath = .githooks\n[alias]\n\tst = status\n[remote \"origin\"]\n\turl = /src/app\n"
	const sub = "[submodule \"lib\"]\n\tactive = true\n\turl = /src/lib\n"
	const mod = "[core]\n\tbare = false\n\tworktree = ../../../lib\n"
	res := dirResolver("/w", "/w/lib", "/w/.git", "/w/.git/modules", "/w/.git/modules/lib", "/elsewhere",
		"/w/lib/.\".\"", "/w/lib/.\".\"/.g\"i\"t", "/w/lib/.\".\"/.g\"i\"t/hooks", "/w/.git/hooks", "/w/.githooks", "/w/.vscode", "/w/src")
	for _, tc := range []struct {
		name, cfg, old, new string
		ok                  bool
	}{
		{"submodule init", "/w/.git/config", host, host + sub, true},
		{"submodule deinit", "/w/.git/config", host + sub, host, true},
		{"unchanged", "/w/.git/config", host, host, true},
		{"comments and blank lines", "/w/.git/config", host, "# c\n" + host + "\n; x\n", true},
		{"update checkout", "/w/.git/config", host, host + sub + "\tupdate = rebase\n", true},
		{"update command", "/w/.git/config", host, host + sub + "\tupdate = !touch /tmp/x\n", false},
		{"update quoted command", "/w/.git/config", host, host + sub + "\tupdate = \"!sh\"\n", false},
		{"url with a command transport", "/w/.git/config", host, host + "[submodule \"lib\"]\n\turl = ext::sh -c x\n", false},
		{"hooksPath changed", "/w/.git/config", host, strings.Replace(host, ".githooks", "/tmp", 1), false},
		{"hooksPath removed", "/w/.git/config", host, strings.Replace(host, "\thooksPath = .githooks\n", "", 1), false},
		{"fsmonitor added", "/w/.git/config", host, host + "[core]\n\tfsmonitor = x\n", false},
		{"include added", "/w/.git/config", host, host + "[include]\n\tpath = x\n", false},
		{"a section moved", "/w/.git/config", host, strings.Replace(host, "[alias]\n\tst = status\n", "", 1) + "[alias]\n\tst = status\n", false},
		{"lines reordered", "/w/.git/config", "[core]\n\tpager = a\n\tpager = b\n", "[core]\n\tpager = b\n\tpager = a\n", false},
		{"remote url changed", "/w/.git/config", host, strings.Replace(host, "/src/app", "/evil", 1), false},
		{"a bare key made a value", "/w/.git/config", "[core]\n\tbare\n", "[core]\n\tbare = \n", false},
		{"an old config cordon cannot read", "/w/.git/config", "[core.x]\n\tbare = false\n", "[core.x]\n\tbare = false\n" + sub, false},
		{"a key on its header's line, as git takes it", "/w/.git/config", "[core] bare = false\n", "[core] bare = false\n" + sub, true},
		{"hooksPath given a trailing vertical tab", "/w/.git/config", host, strings.Replace(host, ".githooks", ".githooks\v", 1), false},
		{"hooksPath given a trailing no-break space", "/w/.git/config", host, strings.Replace(host, ".githooks", ".githooks\u00a0", 1), false},
		{"hooksPath given a leading form feed", "/w/.git/config", host, strings.Replace(host, ".githooks", "\f.githooks", 1), false},
		{"hooksPath quoted, the same to git", "/w/.git/config", host, strings.Replace(host, ".githooks", "\".githooks\" # c", 1), true},
		{"hooksPath split by quotes into another", "/w/.git/config", host, strings.Replace(host, ".githooks", "\".git\"hooks/x", 1), false},
		{"hooksPath continued on the next line", "/w/.git/config", host, strings.Replace(host, ".githooks", ".git\\\nhooks", 1), false},
		{"url with quotes hiding ext::", "/w/.git/config", host, host + "[submodule \"lib\"]\n\turl = \"e\"xt::sh -c x\n", false},
		{"url with an escape hiding ext::", "/w/.git/config", host, host + "[submodule \"lib\"]\n\turl = \\\next::sh\n", false},
		{"update with quotes hiding a command", "/w/.git/config", host, host + sub + "\tupdate = \"!\"sh\n", false},
		{"update in capitals, which git refuses", "/w/.git/config", host, host + sub + "\tupdate = CHECKOUT\n", false},
		{"a subsection with an escaped quote", "/w/.git/config", host, host + "[submodule \"a\\\"b\"]\n\turl = /src/lib\n", true},
		{"a continued value, which cordon's readers would not all read as git", "/w/.git/config", host, host + "[submodule \"lib\"]\n\turl = x\\\n[core]\n", false},
		{"a NUL ending the value for git", "/w/.git/config", host, host + "[submodule \"lib\"]\n\turl = /src\x00ext::sh\n", false},
		{"worktree of a submodule whose quoted dots git reads as ..", "/w/.git/modules/lib/config", mod, strings.Replace(mod, "../../../lib", "../../../lib/.\".\"/.g\"i\"t/hooks", 1), false},
		{"worktree of a submodule into the protected hooks path", "/w/.git/modules/lib/config", mod, strings.Replace(mod, "../../../lib", "../../../.githooks", 1), false},
		{"worktree of a submodule into protected editor settings", "/w/.git/modules/lib/config", mod, strings.Replace(mod, "../../../lib", "/w/.vscode", 1), false},
		{"worktree of a submodule at the superproject's root", "/w/.git/modules/lib/config", mod, strings.Replace(mod, "../../../lib", "../../..", 1), false},
		{"worktree of a submodule to another directory of the checkout", "/w/.git/modules/lib/config", mod, strings.Replace(mod, "../../../lib", "/w/src", 1), false},
		{"worktree quoted, the same directory", "/w/.git/modules/lib/config", mod, strings.Replace(mod, "../../../lib", "\"../../../lib\"", 1), true},
		{"worktree rewritten, same value", "/w/.git/modules/lib/config", mod, mod, true},
		{"worktree rewritten, same directory", "/w/.git/modules/lib/config", mod, strings.Replace(mod, "../../../lib", "/w/lib", 1), true},
		{"worktree of a submodule to its checkout", "/w/.git/modules/lib/config", "[core]\n\tbare = false\n", mod, false},
		{"worktree of a submodule elsewhere", "/w/.git/modules/lib/config", mod, strings.Replace(mod, "../../../lib", "/elsewhere", 1), false},
		{"worktree of a submodule into .git", "/w/.git/modules/lib/config", mod, strings.Replace(mod, "../../../lib", "..", 1), false},
		{"worktree of a repository set", "/w/.git/config", host, host + "[core]\n\tworktree = /w/lib\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := GitConfigChange([]byte(tc.old), []byte(tc.new), tc.cfg, Rules{Resolve: res, Refuse: guard})
			if (err == nil) != tc.ok {
				t.Errorf("GitConfigChange = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "line") && !strings.Contains(err.Error(), "removed") && !strings.Contains(err.Error(), "does not decide") && !strings.Contains(err.Error(), "the end") {
				t.Errorf("the refusal names no line: %v", err)
			}
		})
	}
}
