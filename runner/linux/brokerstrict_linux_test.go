package linux_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// hostRenameRun starts a run that waits, then reads the denied names;
// meanwhile the host replaces .env by rename (as an editor or a secrets
// tool does) and creates sub/key.pem, a deny pattern's match that did not
// exist at start.
func hostRenameRun(t *testing.T, strict bool) (runOut, string) {
	t.Helper()
	sb := newSandbox(t)
	ws := sb.Root
	sb.Deny = []string{ws + "/.env", ws + "/**/*.pem"}
	sb.StrictDeny = strict
	env := filepath.Join(ws, ".env")
	if err := os.WriteFile(env, []byte("TOKEN=old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	sync := t.TempDir()
	sb.Mounts = append(sb.Mounts, spec.Mount{Source: sync})
	done := make(chan runOut, 1)
	go func() {
		done <- run(t, sb, "", sh("touch "+sync+"/started; while [ ! -e "+sync+"/go ]; do sleep 0.05; done; "+
			"cat .env; cat sub/key.pem; ln -s .env l; cat l; cat sub/../.env; "+
			"python3 -c 'print(open(\".env\").read())'; exec cat .env")...)
	}()
	waitForFile(t, filepath.Join(sync, "started"))
	if err := os.WriteFile(env+".tmp", []byte("TOKEN=hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(env+".tmp", env); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub/key.pem"), []byte("PEMSECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sync, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return <-done, ws
}

// TestIntegrationBrokerStrictDenyHostRename is the security property "with
// strict_deny, a denied path is never readable, even when the host renames
// a new file over it or creates it mid-run": every read (directly, through
// a symlink, with .., from Python) is refused from the broker's record, and
// none of the new contents reaches the command.
func TestIntegrationBrokerStrictDenyHostRename(t *testing.T) {
	out, ws := hostRenameRun(t, true)
	if strings.Contains(out.stdout, "hunter2") || strings.Contains(out.stdout, "PEMSECRET") {
		t.Fatalf("strict_deny: the command read what the host renamed in: %q", out.stdout)
	}
	if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != filepath.Join(ws, ".env") {
		t.Fatalf("want sandbox_denied on .env from the broker, got %+v %s", out.res, out.stderr)
	}
}

// TestIntegrationBrokerDenyHostRenameCovered: without strict_deny too, a
// file the host renames over a denied path, or creates under a deny
// pattern, while the run is active is covered by the deny watcher
// (denywatch_linux.go) before the command's next reads: directly, through
// a symlink, with .., from Python. (It replaces the test that showed the
// whole-run window; TestIntegrationDenyWindowHostWrites measures what is
// left of it.)
func TestIntegrationBrokerDenyHostRenameCovered(t *testing.T) {
	out, ws := hostRenameRun(t, false)
	if strings.Contains(out.stdout, "hunter2") || strings.Contains(out.stdout, "PEMSECRET") {
		t.Fatalf("the command read what the host renamed or created: %q", out.stdout)
	}
	if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != filepath.Join(ws, ".env") {
		t.Fatalf("want sandbox_denied on .env, got %+v %s", out.res, out.stderr)
	}
}

// TestIntegrationBrokerStrictDenyWorks: with strict_deny, ordinary work
// goes on: reads of allowed and protected files, /proc/self, /dev/stdin,
// /dev/fd, Python imports, git, and a read of a denied path that existed
// at start is refused too (not only masked).
func TestIntegrationBrokerStrictDenyWorks(t *testing.T) {
	sb := newSandbox(t)
	ws := sb.Root
	sb.StrictDeny = true
	sb.Deny = []string{ws + "/**/.env"}
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `set -e
mkdir -p .git/hooks; cat .git/hooks/ >/dev/null 2>&1 || true
echo data > f; cat /proc/self/root$PWD/f /proc/thread-self/cwd/f >/dev/null; cat f; grep -c '^Name:' /proc/self/status; head -c 3 /proc/thread-self/comm; echo
echo in | cat /dev/stdin; ls /dev/fd/ >/dev/null; cat /etc/mtab >/dev/null
python3 -c 'import json, email.mime.text, os; print(len(os.listdir("/proc/self/fd")) > 0)'
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
git init -q -b main r && cd r && echo x > a && git add a && git commit -q -m a && git log --oneline | wc -l
cd .. && cat /proc/self/cwd/.env /proc/1/root$PWD/.env; exec cat .env`
	out := run(t, sb, "", sh(script)...)
	if out.stdout != "data\n1\nhea\nin\nTrue\n1\n" {
		t.Fatalf("strict_deny broke ordinary work: %+v stdout %q stderr %s", out.res, out.stdout, out.stderr)
	}
	if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != filepath.Join(ws, ".env") {
		t.Fatalf("want the read of .env refused from the broker's record: %+v %s", out.res, out.stderr)
	}
}
