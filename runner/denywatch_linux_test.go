package runner_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// denyReadLoop reads each path as fast as it can until the file go exists,
// and prints every change of what a read gives: "NS PATH ok:CONTENT" or
// "NS PATH err:ERRNO", NS being CLOCK_MONOTONIC, which the host shares.
// Then it reads each once more: "final PATH ...".
const denyReadLoop = `import os, sys, time
go, paths, last = sys.argv[1], sys.argv[3:], {}
def read(p):
    try:
        with open(p) as f:
            return "ok:" + f.read().strip()
    except OSError as e:
        return "err:%d" % e.errno
open(sys.argv[2], "w").close()
while not os.path.exists(go):
    for p in paths:
        t, s = time.monotonic_ns(), read(p)
        if last.get(p) != s:
            last[p] = s
            print(t, p, s)
for p in paths:
    print("final", p, read(p))
`

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// readChange is one line of denyReadLoop's log.
type readChange struct {
	at     int64
	path   string
	result string
}

func parseReadLog(t *testing.T, out string) (changes []readChange, final map[string]string) {
	t.Helper()
	final = map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "final" {
			final[f[1]] = f[2]
			continue
		}
		at, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("bad log line %q", sc.Text())
		}
		changes = append(changes, readChange{at, f[1], f[2]})
	}
	return changes, final
}

// windowAfter measures, for path, what the sandbox saw after the host acted
// at hostAt: the time to the first refused read (EACCES) and the time to
// the last read that still showed secret. It fails the test when a read
// succeeded after the first refusal: once covered, a path stays covered.
func windowAfter(t *testing.T, changes []readChange, path string, hostAt int64, secret string) (refused, lastSeen time.Duration) {
	t.Helper()
	refused, lastSeen = -1, -1
	for _, c := range changes {
		if c.path != path || c.at < hostAt {
			continue
		}
		switch {
		case c.result == "err:13" && refused < 0:
			refused = time.Duration(c.at - hostAt)
		case strings.HasPrefix(c.result, "ok:") && refused >= 0:
			t.Errorf("%s was readable again (%q) after it was covered", path, c.result)
		}
		if strings.Contains(c.result, secret) {
			lastSeen = time.Duration(c.at - hostAt)
		}
	}
	return refused, lastSeen
}

// TestIntegrationDenyWindowHostWrites is the security property "without
// strict_deny, a file the host renames over a denied path or creates under
// a deny pattern mid-run is covered in the sandbox as it appears": a loop
// in the sandbox reads both names while the host replaces .env by rename
// (`mv .env.tmp .env`) and creates and writes sub/key.pem. Once a read is
// refused no later read succeeds, the final reads are refused without the
// content, and the host's files are left as the host wrote them. It prints
// the measured window: the time from the host's call to the first refused
// read, and to the last read that showed the secret (if any did).
func TestIntegrationDenyWindowHostWrites(t *testing.T) {
	sb := newSandbox(t)
	ws := sb.Root
	sb.Deny = []string{ws + "/.env", ws + "/**/*.pem"}
	env, pem := filepath.Join(ws, ".env"), filepath.Join(ws, "sub/key.pem")
	if err := os.WriteFile(env, []byte("TOKEN=old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(pem), 0o755); err != nil {
		t.Fatal(err)
	}
	sync := t.TempDir()
	sb.Mounts = append(sb.Mounts, spec.Mount{Source: sync})
	done := make(chan runOut, 1)
	go func() {
		done <- run(t, sb, "", "python3", "-c", denyReadLoop, sync+"/go", sync+"/started", ".env", "sub/key.pem")
	}()
	waitForFile(t, filepath.Join(sync, "started"))
	time.Sleep(100 * time.Millisecond) // let the loop read the old state a while
	if err := os.WriteFile(env+".tmp", []byte("TOKEN=hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	renameAt := monoNow()
	if err := os.Rename(env+".tmp", env); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	createAt := monoNow()
	f, err := os.OpenFile(pem, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("PEMSECRET\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(sync, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := <-done
	changes, final := parseReadLog(t, out.stdout)
	for p, secret := range map[string]string{".env": "hunter2", "sub/key.pem": "PEMSECRET"} {
		if final[p] != "err:13" {
			t.Errorf("the final read of %s gave %q, want it refused (err:13); log:\n%s%s", p, final[p], out.stdout, out.stderr)
		}
		at := renameAt
		if p == "sub/key.pem" {
			at = createAt
		}
		refused, lastSeen := windowAfter(t, changes, p, at, secret)
		t.Logf("deny window for %s: first refused read %v after the host's call; last read of the secret: %v (-1: never)", p, refused, lastSeen)
	}
	for p, want := range map[string]string{env: "TOKEN=hunter2\n", pem: "PEMSECRET\n"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("the host's %s changed: %q %v", p, b, err)
		}
	}
	mustNotBeMountedHere(t, ws)
}

// mustNotBeMountedHere: no cover leaked into the test's own mount
// namespace.
func mustNotBeMountedHere(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), dir) {
		t.Fatalf("a mount at %s is visible on the host:\n%s", dir, b)
	}
}

// TestIntegrationDenyWindowSession: a warm session's watcher lives as long
// as the session. A file the host creates under a deny pattern, and a
// directory it creates at a denied path that was missing at start, long
// after the session started and between two execs, are covered: the next
// exec waits until a read is refused, then every read is refused and the
// content never shows after that.
func TestIntegrationDenyWindowSession(t *testing.T) {
	sb := newSandbox(t)
	ws := sb.Root
	sb.Deny = []string{ws + "/**/.env", ws + "/conf/secrets"}
	s := startSession(t, sb)
	if o := execIn(t, s, runner.ExecRequest{Args: sh("cat .env; ls conf")}); o.res.ExitCode == 0 {
		t.Fatalf("nothing exists yet, the reads should fail: %+v", o)
	}
	if err := os.MkdirAll(filepath.Join(ws, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a/b/.env"), []byte("SESSIONSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "conf/secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "conf/secrets/key"), []byte("DIRSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `until ! cat a/b/.env >/dev/null 2>&1; do :; done
until ! cat conf/secrets/key >/dev/null 2>&1; do :; done
for i in 1 2 3; do cat a/b/.env conf/secrets/key; ls conf/secrets; done; echo end`
	o := execIn(t, s, runner.ExecRequest{Args: sh(script)})
	if strings.Contains(o.stdout, "SESSIONSECRET") || strings.Contains(o.stdout, "DIRSECRET") || !strings.HasSuffix(o.stdout, "end\n") {
		t.Fatalf("a covered path showed its content, or the exec did not finish: %q %q", o.stdout, o.stderr)
	}
	if !strings.Contains(o.stderr, "a/b/.env: Permission denied") {
		t.Fatalf("want the read of a/b/.env refused: %q", o.stderr)
	}
	mustNotBeMountedHere(t, ws)
}
