package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// hostGit runs git on the host (as the test's user) and fails the test on
// an error.
func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v %s", args, dir, err, b)
	}
	return string(b)
}

// gitWork is the everyday git a shape must allow: status, add, commit,
// branch, log, stash and rebase. It prints the log's length and the
// status's at the end.
const gitWork = `set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
git status --short >/dev/null
start=$(git rev-parse --abbrev-ref HEAD)
echo a > $SHAPE-a.txt; git add $SHAPE-a.txt; git commit -q -m a
git branch $SHAPE-feature; git checkout -q $SHAPE-feature; echo b > $SHAPE-b.txt; git add $SHAPE-b.txt; git commit -q -m b
git checkout -q "$start"; echo c > $SHAPE-c.txt; git add $SHAPE-c.txt; git commit -q -m c
echo dirty >> $SHAPE-a.txt; git stash -q; git stash pop -q; git checkout -q -- $SHAPE-a.txt
git checkout -q $SHAPE-feature; git rebase -q "$start"; git log --oneline | wc -l; git status --short | wc -l`

// TestIntegrationBrokerGitShapes: real git in every shape of repository
// the workspace can be, with the default protect list: a linked worktree
// (its main repository's .git mounted read-write, the documented way), a
// submodule checkout (the superproject's .git mounted so), and a
// superproject with a submodule. The everyday commands work in each; the
// hooks, configs, submodule gitdirs' hooks and configs, and worktree
// metadata refuse writes, each reported with its exact path from the
// broker; nothing planted runs in the host's next git; go build works in
// a workspace that is no repository.
func TestIntegrationBrokerGitShapes(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := t.TempDir()
	mark := filepath.Join(t.TempDir(), "pwned")
	plantCfg := "git config core.fsmonitor 'touch " + mark + "'"
	lib := filepath.Join(base, "lib")
	hostGit(t, base, "init", "-q", "-b", "main", lib)
	hostGit(t, lib, "commit", "-q", "--allow-empty", "-m", "lib")
	main := filepath.Join(base, "main")
	hostGit(t, base, "init", "-q", "-b", "main", main)
	hostGit(t, main, "commit", "-q", "--allow-empty", "-m", "root")
	hostGit(t, main, "submodule", "add", "-q", lib, "lib")
	hostGit(t, main, "commit", "-q", "-m", "sub")
	hostGit(t, main, "worktree", "add", "-q", "-b", "wt", filepath.Join(base, "wt"))
	mainGit := filepath.Join(main, ".git")
	type plant struct{ script, blocked string }
	for _, tc := range []struct {
		name, root string
		mounts     []spec.Mount
		plants     []plant
	}{
		{"linked worktree", filepath.Join(base, "wt"), []spec.Mount{{Source: mainGit}}, []plant{
			{"echo x > " + mainGit + "/hooks/pre-commit", mainGit + "/hooks/pre-commit"},
			{plantCfg, mainGit + "/config"},
			{"echo '[core]' > " + mainGit + "/worktrees/wt/config.worktree", mainGit + "/worktrees/wt/config.worktree"},
			{"echo .. > " + mainGit + "/worktrees/wt/commondir", mainGit + "/worktrees/wt/commondir"},
			{"git worktree add -q ../wt2 2>/dev/null", mainGit + "/worktrees/wt2/gitdir"},
			{"echo x > " + mainGit + "/modules/lib/hooks/post-checkout", mainGit + "/modules/lib/hooks/post-checkout"},
		}},
		{"submodule checkout", filepath.Join(main, "lib"), []spec.Mount{{Source: mainGit}}, []plant{
			{plantCfg, mainGit + "/modules/lib/config"},
			{"echo x > " + mainGit + "/modules/lib/hooks/pre-commit", mainGit + "/modules/lib/hooks/pre-commit"},
			{"echo x > " + mainGit + "/hooks/pre-commit", mainGit + "/hooks/pre-commit"},
			{"printf 'gitdir: /tmp\\n' > .git; grep -q /tmp .git", filepath.Join(main, "lib/.git")},
		}},
		{"superproject", main, nil, []plant{
			{"git -C lib config core.fsmonitor 'touch " + mark + "'", mainGit + "/modules/lib/config"},
			{"echo x > .git/modules/lib/hooks/pre-commit", mainGit + "/modules/lib/hooks/pre-commit"},
			{plantCfg, mainGit + "/config"},
			{"echo x > .git/hooks/post-checkout", mainGit + "/hooks/post-checkout"},
			{"echo x > .git/worktrees/wt/HEAD", mainGit + "/worktrees/wt/HEAD"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			sb.Root = tc.root
			sb.Mounts = tc.mounts
			defaultProtect(sb)
			if tc.name == "superproject" {
				// The submodule checkout's shape moved lib on.
				hostGit(t, main, "commit", "-q", "--allow-empty", "-am", "bump")
			}
			hostBefore := listing(t, filepath.Join(mainGit, "hooks"))
			out := run(t, sb, "", sh("SHAPE=s"+strings.ReplaceAll(tc.name, " ", "-")+"\n"+gitWork)...)
			if out.res.ExitCode != 0 || !strings.HasSuffix(out.stdout, "\n0\n") {
				t.Fatalf("git in a %s: %+v stdout %q stderr %s", tc.name, out.res, out.stdout, out.stderr)
			}
			if tc.name == "superproject" {
				sub := "set -e; export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t\n" +
					"cd lib; echo s > s.txt; git add s.txt; git commit -q -m s; cd ..; git add lib; git commit -q -m bump; git submodule status | wc -l"
				if out := run(t, sb, "", sh(sub)...); out.res.ExitCode != 0 || out.stdout != "1\n" {
					t.Fatalf("a commit in the submodule and the bump: %+v %q %s", out.res, out.stdout, out.stderr)
				}
			}
			for _, p := range tc.plants {
				out := run(t, sb, "", sh(p.script)...)
				if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != p.blocked {
					t.Errorf("%s: want sandbox_denied on %s, got %+v %s", p.script, p.blocked, out.res, out.stderr)
				}
			}
			if got := listing(t, filepath.Join(mainGit, "hooks")); strings.Join(got, "\n") != strings.Join(hostBefore, "\n") {
				t.Errorf("the main repository's hooks changed: %v", got)
			}
			for _, p := range []string{"modules/lib/hooks/pre-commit", "modules/lib/hooks/post-checkout", "worktrees/wt/config.worktree", "worktrees/wt2"} {
				mustNotExist(t, filepath.Join(mainGit, p))
			}
			// The host's next git in each checkout runs nothing planted.
			for _, d := range []string{main, filepath.Join(main, "lib"), filepath.Join(base, "wt")} {
				hostGit(t, d, "status", "--short")
			}
			mustNotExist(t, mark)
		})
	}
	t.Run("go build outside a repository", func(t *testing.T) {
		if _, err := exec.LookPath("go"); err != nil {
			t.Skip("no go")
		}
		sb := newSandbox(t)
		defaultProtect(sb)
		goroot := strings.TrimSpace(string(must(exec.Command("go", "env", "GOROOT").Output())))
		sb.Mounts = append(sb.Mounts, spec.Mount{Source: goroot, Readonly: true})
		for f, s := range map[string]string{"go.mod": "module shape\n\ngo 1.21\n", "main.go": "package main\n\nfunc main() { println(\"built\") }\n"} {
			if err := os.WriteFile(filepath.Join(sb.Root, f), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		before := listing(t, sb.Root)
		out := run(t, sb, "", sh("export HOME=/tmp GOCACHE=/tmp/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local; "+goroot+"/bin/go build -o /tmp/shape . && /tmp/shape")...)
		if out.res.ExitCode != 0 || !strings.Contains(out.stderr, "built") {
			t.Fatalf("go build: %+v %s", out.res, out.stderr)
		}
		if after := listing(t, sb.Root); strings.Join(after, "\n") != strings.Join(before, "\n") {
			t.Fatalf("the workspace changed: %v -> %v", before, after)
		}
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
