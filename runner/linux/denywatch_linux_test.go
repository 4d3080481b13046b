package linux_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// denyReadLoop reads each path as fast as it can until the file go exists,
// and prints every change of what a read gives, and what it gives at least
// every millisecond: "START END PATH ok:CONTENT" or "START END PATH
// err:ERRNO", START and END being CLOCK_MONOTONIC (which the host shares)
// before and after the read. Then it reads each once more: "final PATH ...".
const denyReadLoop = `import os, sys, time
go, paths, last, when = sys.argv[1], sys.argv[3:], {}, {}
def read(p):
    try:
        with open(p) as f:
            return "ok:" + f.read().strip()
    except OSError as e:
        return "err:%d" % e.errno
open(sys.argv[2], "w").close()
while not os.path.exists(go):
    for p in paths:
        t0 = time.monotonic_ns()
        s = read(p)
        t1 = time.monotonic_ns()
        if last.get(p) != s or t1 - when.get(p, 0) > 1000000:
            last[p], when[p] = s, t1
            print(t0, t1, p, s)
for p in paths:
    print("final final", p, read(p))
`

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// readChange is one line of denyReadLoop's log.
type readChange struct {
	start, end int64
	path       string
	result     string
}

func parseReadLog(t *testing.T, out string) (changes []readChange, final map[string]string) {
	t.Helper()
	final = map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) != 4 {
			continue
		}
		if f[0] == "final" {
			final[f[2]] = f[3]
			continue
		}
		start, err1 := strconv.ParseInt(f[0], 10, 64)
		end, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad log line %q", sc.Text())
		}
		changes = append(changes, readChange{start, end, f[2], f[3]})
	}
	return changes, final
}

// hostCall is one change the host made to a denied path: it began at began
// (writing the new file, or removing the old one), its call that makes the
// name appear began at called and had returned at returned; next is when
// the host began its next change of that path.
type hostCall struct {
	began, called, returned, next int64
	secret                        string
}

// windowAfter measures what the sandbox saw of path after the host call c:
// the time from c.called to the end of the first read begun after the call
// returned that was refused (EACCES; -1: none before the host's next
// change, which a loaded machine may cause by not running the loop), and
// to the end of the last read that showed c.secret (-1: none). It fails
// the test when a read begun after that refusal succeeded: once covered, a
// path stays covered until the host changes it again. (A read begun before the call returned may still find the old
// cover, or, for an instant inside the host's unlink or rename, the old
// file the kernel has already uncovered: see the README.)
func windowAfter(t *testing.T, changes []readChange, path string, c hostCall) (refused, lastSeen time.Duration) {
	t.Helper()
	refused, lastSeen = -1, -1
	var refusedEnd int64
	for _, r := range changes {
		if r.path != path || r.start < c.called || r.end >= c.next {
			continue
		}
		switch {
		case r.result == "err:13" && refused < 0 && r.start >= c.returned:
			refused, refusedEnd = time.Duration(r.end-c.called), r.end
		case strings.HasPrefix(r.result, "ok:") && refused >= 0 && r.start >= refusedEnd:
			t.Errorf("%s was readable again (%q) after it was covered", path, r.result)
		}
		if strings.Contains(r.result, c.secret) {
			lastSeen = time.Duration(r.end - c.called)
		}
	}
	if refused < 0 {
		var seen []string
		for _, r := range changes {
			if r.path == path && r.end >= c.began && r.start < c.next {
				seen = append(seen, fmt.Sprintf("%+.3fms..%+.3fms %s", float64(r.start-c.called)/1e6, float64(r.end-c.called)/1e6, r.result))
			}
		}
		t.Logf("%s: no read begun after the host's call returned (%+.3fms) was refused before its next change (%+.3fms): %v",
			path, float64(c.returned-c.called)/1e6, float64(c.next-c.called)/1e6, seen)
	}
	return refused, lastSeen
}

// denyWindowRounds is how often the host replaces each denied file.
const denyWindowRounds = 10

// TestIntegrationDenyWindowHostWrites is the security property "without
// strict_deny, a file the host renames over a denied path or creates under
// a deny pattern mid-run is covered in the sandbox as it appears": a loop
// in the sandbox reads both names while the host, ten times each, replaces
// .env by rename (`mv .env.tmp .env`) and removes, creates and writes
// sub/key.pem. After each host call a read is refused and no later read
// succeeds until the host's next change, the final reads are refused
// without the content, and the host's files are left as the host wrote
// them. It logs the measured window: the longest and the median time from
// the host's call to the first refused read, and the longest time to the
// last read that showed the new secret.
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
	calls := map[string][]hostCall{}
	for i := 0; i < denyWindowRounds; i++ {
		// Spaced so that the loop sees each state: the pass criterion is
		// the order of what it saw, never these durations.
		time.Sleep(30 * time.Millisecond)
		calls[".env"] = append(calls[".env"], hostRenameOver(t, env, fmt.Sprintf("TOKEN=hunter%d.", i)))
		time.Sleep(30 * time.Millisecond)
		calls["sub/key.pem"] = append(calls["sub/key.pem"], hostCreate(t, pem, fmt.Sprintf("PEMSECRET%d.", i)))
	}
	time.Sleep(30 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(sync, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := <-done
	changes, final := parseReadLog(t, out.stdout)
	for path, cs := range calls {
		if final[path] != "err:13" {
			t.Errorf("the final read of %s gave %q, want it refused (err:13); log:\n%s%s", path, final[path], out.stdout, out.stderr)
		}
		var refused []time.Duration
		var seen time.Duration = -1
		for i, c := range cs {
			c.next = monoNow()
			if i+1 < len(cs) {
				c.next = cs[i+1].began
			}
			r, l := windowAfter(t, changes, path, c)
			if r >= 0 {
				refused = append(refused, r)
			}
			seen = max(seen, l)
		}
		if len(refused) == 0 {
			t.Fatalf("%s: no host change was followed by a refused read: nothing covered it", path)
		}
		slices.Sort(refused)
		t.Logf("deny window for %s over %d of %d host calls: first refused read after at most %v (median %v); "+
			"the new secret was last read %v after the host's call (-1ns: never)",
			path, len(refused), len(cs), refused[len(refused)-1], refused[len(refused)/2], seen)
	}
	if b, err := os.ReadFile(env); err != nil || string(b) != fmt.Sprintf("TOKEN=hunter%d.", denyWindowRounds-1) {
		t.Errorf("the host's .env changed: %q %v", b, err)
	}
	mustNotBeMountedHere(t, ws)
	noCoverHelperLeft(t)
}

// noCoverHelperLeft: no deny cover helper of this process outlives its
// run or session.
func noCoverHelperLeft(t *testing.T) {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), "cordon-deny-cover") {
			continue
		}
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if strings.Contains(string(status), fmt.Sprintf("\nPPid:\t%d\n", os.Getpid())) {
			t.Errorf("the deny cover helper %s is still running", e.Name())
		}
	}
}

// hostRenameOver replaces path by rename, as an editor or a secrets tool
// does.
func hostRenameOver(t *testing.T, path, content string) hostCall {
	t.Helper()
	c := hostCall{secret: content, began: monoNow()}
	if err := os.WriteFile(path+".tmp", []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	c.called = monoNow()
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	c.returned = monoNow()
	return c
}

// hostCreate removes path, creates it anew and writes content into it.
func hostCreate(t *testing.T, path, content string) hostCall {
	t.Helper()
	c := hostCall{secret: content, began: monoNow()}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	c.called = monoNow()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	c.returned = monoNow()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return c
}

// mustNotBeMountedHere: no cover leaked into the test's own mount
// namespace. It reads this thread's table: /proc/self is the main
// thread's, which libcontainer's mount-source thread may have left in a
// sandbox's mount namespace.
func mustNotBeMountedHere(t *testing.T, dir string) {
	t.Helper()
	runtime.LockOSThread()
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, dir) {
			t.Fatalf("a mount at %s is visible on the host: %s", dir, l)
		}
	}
}

// TestIntegrationDenyWindowSession: a warm session's watcher lives as long
// as the session. Between two execs the host creates a file under a deny
// pattern in new directories, creates a directory at a denied path that
// was missing at start, moves in a directory from elsewhere that holds a
// match, and renames away the parent of a denied path and makes it anew
// with the secret inside: each is covered. The next exec waits until the
// reads are refused, then every read is refused and no content shows.
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
	// A directory from outside the sandbox, moved in whole.
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "proj/deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "proj/deep/.env"), []byte("MOVEDSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(outside, "proj"), filepath.Join(ws, "proj")); err != nil {
		t.Fatal(err)
	}
	// The parent of the denied conf/secrets renamed away, and made anew.
	if err := os.Rename(filepath.Join(ws, "conf"), filepath.Join(ws, "conf.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "conf/secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "conf/secrets/key"), []byte("NEWDIRSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `for f in a/b/.env conf/secrets/key proj/deep/.env; do until ! cat $f >/dev/null 2>&1; do :; done; done
for i in 1 2 3; do cat a/b/.env conf/secrets/key proj/deep/.env; ls conf/secrets; done; echo end`
	o := execIn(t, s, runner.ExecRequest{Args: sh(script)})
	if strings.Contains(o.stdout, "SECRET") || !strings.HasSuffix(o.stdout, "end\n") {
		t.Fatalf("a covered path showed its content, or the exec did not finish: %q %q", o.stdout, o.stderr)
	}
	for _, f := range []string{"a/b/.env", "proj/deep/.env"} {
		if !strings.Contains(o.stderr, f+": Permission denied") {
			t.Fatalf("want the read of %s refused: %q", f, o.stderr)
		}
	}
	mustNotBeMountedHere(t, ws)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	noCoverHelperLeft(t)
}

// TestIntegrationDenyWindowDevNullReplaced: the cover does not rely on
// anything the command can change. A root run's command can replace its
// /dev/null (its /dev is the sandbox's own tmpfs) by a file of its own;
// the helper clones the null device it opened before the command ran, so a
// file the host then renames over a denied path is still covered with it,
// and the run goes on.
func TestIntegrationDenyWindowDevNullReplaced(t *testing.T) {
	sb := newSandbox(t)
	ws := sb.Root
	sb.Deny = []string{ws + "/.env"}
	env := filepath.Join(ws, ".env")
	if err := os.WriteFile(env, []byte("TOKEN=old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sync := t.TempDir()
	sb.Mounts = append(sb.Mounts, spec.Mount{Source: sync})
	done := make(chan runOut, 1)
	go func() {
		done <- run(t, sb, "", sh("rm -f /dev/null && echo PLANTED > /dev/null; touch "+sync+"/started; "+
			"while [ ! -e "+sync+"/go ]; do sleep 0.01; done; until ! cat .env >"+sync+"/seen 2>&1; do :; done; "+
			"cat /dev/null; cat .env; echo end")...)
	}()
	waitForFile(t, filepath.Join(sync, "started"))
	hostRenameOver(t, env, "TOKEN=hunter2\n")
	if err := os.WriteFile(filepath.Join(sync, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if strings.Contains(out.stdout, "hunter2") || !strings.HasSuffix(out.stdout, "end\n") {
		t.Fatalf("the renamed file showed, or the run was cut short: %+v %q %q", out.res, out.stdout, out.stderr)
	}
	if !strings.Contains(out.stderr, ".env: Permission denied") {
		t.Fatalf("want the read of .env refused: %q", out.stderr)
	}
	mustNotBeMountedHere(t, ws)
}

// TestIntegrationDenyPatternUnderRemappedMount: a deny pattern's match that
// exists at start under a mount whose target is not its source
// (/fix/**/*.pem, /fix being another host directory) is hidden. The build
// looks for a pattern's matches at the sandbox path on the host, which
// finds nothing there; the deny watcher's walk maps each directory to its
// host path, finds the match and covers it before the command runs.
func TestIntegrationDenyPatternUnderRemappedMount(t *testing.T) {
	sb := newSandbox(t)
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "sub/key.pem"), []byte("REMAPPEDSECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb.Mounts = append(sb.Mounts, spec.Mount{Source: src, Target: "/fix", Readonly: true})
	sb.Deny = []string{"/fix/**/*.pem"}
	out := run(t, sb, "", sh("cat /fix/sub/key.pem; ls /fix/sub")...)
	if strings.Contains(out.stdout, "REMAPPEDSECRET") || !strings.Contains(out.stderr, "key.pem: Permission denied") {
		t.Fatalf("the match under /fix was readable: %+v %q %q", out.res, out.stdout, out.stderr)
	}
	mustNotBeMountedHere(t, src)
}
