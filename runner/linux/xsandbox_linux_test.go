package linux_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/broker"
	"github.com/cordon-run/cordon/runner"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
	"github.com/cordon-run/cordon/spec"
)

// xIterations bounds each racer's loop: the test passes on what the end
// state holds, never on how long it ran.
const xIterations = 2000

// xPrelude is the start of every racer: the workspace's "won" file ends
// every loop (a racer that saw the rule broken writes it), and ready.TAG
// files make the racers start together, as sandboxes start at different
// moments.
const xPrelude = `
import os, sys, time
N, TAG, PEERS = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def won():
    return os.path.exists("won")
def win(why):
    try:
        open("won", "a").write(TAG + ": " + why + "\n")
    except OSError:  # another user's: its own report is there
        pass
done, errnos = 0, {}
def failed(e):
    errnos[e.errno] = errnos.get(e.errno, 0) + 1
def read(p):
    try:
        return open(p).read()
    except OSError:
        return ""
open("ready." + TAG, "w").close()
for _ in range(20000):
    if len([n for n in os.listdir(".") if n.startswith("ready.")]) >= PEERS:
        break
    time.sleep(0.001)
`

// xMkdirRefs completes the shape in r again and again: mkdir r/refs, look
// at r/config, rmdir r/refs.
const xMkdirRefs = xPrelude + `
for _ in range(N):
    if won():
        break
    try:
        os.mkdir("r/refs")
    except OSError as e:
        failed(e)
        continue
    done += 1
    if "pager" in read("r/config"):
        win("r/refs made beside a pager config")
        break
    try:
        os.rmdir("r/refs")
    except OSError:
        pass
print("done", done, "errnos", sorted(errnos.items()))
`

// xRenameConfig renames a core.pager config to r/config again and again,
// and then removes it (RESTORE empty) or renames a harmless one back.
const xRenameConfig = xPrelude + `
PAGER, RESTORE = sys.argv[4], sys.argv[5]
tmp = "cfg." + TAG
for _ in range(N):
    if won():
        break
    open(tmp, "w").write(PAGER)
    try:
        os.rename(tmp, "r/config")
    except OSError as e:
        failed(e)
        continue
    done += 1
    if os.path.isdir("r/refs") and "pager" in read("r/config"):
        win("a pager config renamed beside r/refs")
        break
    if won():
        break
    try:
        if RESTORE:
            open(tmp, "w").write(RESTORE)
            os.rename(tmp, "r/config")
        else:
            os.unlink("r/config")
    except OSError:
        pass
print("done", done, "errnos", sorted(errnos.items()))
`

// xMoveTree moves x to DST and back again and again (the broker walks x
// each time and decides what it carries), and looks for the GUARDED names
// (comma-separated) below DST: one seen there breaks the rule, or with
// SEEN "count" is only counted (a name no lock covers may be seen there
// for the moment before its maker's broker removes it again, see
// internal/broker/xlock_linux.go).
const xMoveTree = xPrelude + `
DST, GUARDED, SEEN = sys.argv[4], sys.argv[5].split(","), sys.argv[6]
seen = 0
for _ in range(N):
    if won():
        break
    if os.path.lexists(DST):
        try:
            os.rename(DST, "x")
        except OSError as e:
            failed(e)
        continue
    try:
        os.rename("x", DST)
    except OSError as e:
        failed(e)
        continue
    done += 1
    for p in GUARDED:
        if os.path.lexists(DST + "/" + p):
            seen += 1
            if SEEN != "count":
                win(DST + "/" + p + " carried in")
            break
print("done", done, "errnos", sorted(errnos.items()), "seen", seen)
`

// xAddToTree changes x while another sandbox moves it: it makes x/MODE
// (config, or settings.json: a name no shape rule takes the lock for) and
// removes it, or renames x/hookz to x/hooks and back.
const xAddToTree = xPrelude + `
MODE = sys.argv[4]
for _ in range(N):
    if won():
        break
    try:
        if MODE in ("config", "settings.json"):
            open("x/" + MODE, "w").write("[core]\n\tpager = touch /nonexistent\n")
            os.unlink("x/" + MODE)
        else:
            os.rename("x/hookz", "x/hooks")
            os.rename("x/hooks", "x/hookz")
        done += 1
    except OSError as e:
        failed(e)
print("done", done, "errnos", sorted(errnos.items()))
`

// racer is one sandbox's script and its arguments after N, TAG and PEERS.
type racer struct {
	script string
	args   []string
	// rootless runs it as uid 4242 (setpriv), a rootless sandbox beside
	// the test's root ones (see TestXRacerHelper).
	rootless bool
	// tools, when set, makes it a file-tools racer of that mode instead
	// (see xToolsReq; args[0] is its pager config).
	tools string
}

// ranRacers checks that the racers of each script acted at least once
// (they print "done N"): a race in which one side never acted proves
// nothing.
func ranRacers(racers []racer, outs []string) error {
	acted := map[string]bool{}
	for i, rc := range racers {
		acted[rc.script] = acted[rc.script] || strings.HasPrefix(outs[i], "done ") && !strings.HasPrefix(outs[i], "done 0 ")
	}
	for i, rc := range racers {
		if !acted[rc.script] {
			return fmt.Errorf("racer %d's side never acted (%q): the race never ran", i, outs[i])
		}
	}
	return nil
}

// runRacers runs the racers at once, each in its own sandbox (its own
// runner.Run, so its own broker) on the workspace ws, and reports each
// failure to run (reported after all ended, not from a racer's goroutine).
func runRacers(t *testing.T, ws string, protect []string, racers []racer) {
	t.Helper()
	state := stateDir(t)
	var wg sync.WaitGroup
	errs := make([]error, len(racers))
	outs := make([]string, len(racers))
	for i, rc := range racers {
		sb := newSandbox(t)
		sb.Root = ws
		sb.Protect = protect
		args := append([]string{"python3", "-c", rc.script, strconv.Itoa(xIterations), "s" + strconv.Itoa(i), strconv.Itoa(len(racers))}, rc.args...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rc.tools != "" {
				outs[i], errs[i] = runToolsRacer(xToolsReq{WS: ws, Protect: protect, Tag: "s" + strconv.Itoa(i),
					Peers: len(racers), N: xIterations, Mode: rc.tools, Pager: rc.args[0]})
				return
			}
			if rc.rootless {
				outs[i], errs[i] = runRootlessRacer(ws, protect, args)
				return
			}
			outs[i], errs[i] = runRacer(state, sb, args)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("racer %d: %v", i, err)
		}
	}
	t.Logf("racers: %q", outs)
	if err := ranRacers(racers, outs); err != nil {
		t.Error(err)
	}
}

func runRacer(state string, sb *spec.Sandbox, args []string) (string, error) {
	r, err := runnerlinux.New(runner.Options{StateDir: state})
	if err != nil {
		return "", fmt.Errorf("runner.New: %w", err)
	}
	var so, se bytes.Buffer
	res, err := r.Run(context.Background(), runner.Request{Sandbox: sb, Args: args, Stdout: &so, Stderr: &se})
	if err != nil {
		return "", fmt.Errorf("run: %w", err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("exit %d (%s %s): %s", res.ExitCode, res.FailureType, res.FailureDetail, se.String())
	}
	return so.String(), nil
}

// rootlessUID is the user a rootless racer runs as.
const rootlessUID = "4242"

// runRootlessRacer runs one racer as uid 4242: this test binary, through
// setpriv, running TestXRacerHelper with the racer in its environment.
func runRootlessRacer(ws string, protect, args []string) (string, error) {
	home, err := os.MkdirTemp("", "cordon-xracer-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	uid, _ := strconv.Atoi(rootlessUID)
	if err := os.Chown(home, uid, uid); err != nil {
		return "", err
	}
	// A copy of this test binary uid 4242 can run: go test builds it in
	// a directory only root may enter.
	self := filepath.Join(home, "runner.test")
	if err := copyExecutable(self); err != nil {
		return "", err
	}
	req, err := json.Marshal(xRacerReq{WS: ws, Protect: protect, Args: args})
	if err != nil {
		return "", err
	}
	var out []byte
	for try := 0; ; try++ {
		cmd := exec.Command("setpriv", "--reuid="+rootlessUID, "--regid="+rootlessUID, "--clear-groups", "--reset-env",
			"env", "HOME="+home, "TMPDIR="+home, "CORDON_ROOTLESS=1", "PATH=/usr/local/bin:/usr/bin:/bin", "CORDON_XRACER="+string(req),
			self, "-test.run", "^TestXRacerHelper$", "-test.count=1")
		cmd.Dir = home
		out, err = cmd.CombinedOutput()
		// ETXTBSY: a process another racer forked while the copy was
		// being written still holds its descriptor open for a moment
		// (golang.org/issue/22315); the exec is tried again.
		if err == nil || try == 20 || !bytes.Contains(out, []byte("Text file busy")) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return "", fmt.Errorf("the rootless racer: %w: %s", err, out)
	}
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if strings.HasPrefix(line, "done ") {
			return line, nil
		}
	}
	return "", fmt.Errorf("the rootless racer printed no count: %s", out)
}

// copyExecutable copies the running test binary to dst, mode 0755.
func copyExecutable(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

type xRacerReq struct {
	WS      string
	Protect []string
	Args    []string
}

// TestXRacerHelper is no test of its own: TestIntegrationBrokerAcrossUsers
// runs it as uid 4242 to race a rootless sandbox against root ones.
func TestXRacerHelper(t *testing.T) {
	env := os.Getenv("CORDON_XRACER")
	if env == "" {
		t.Skip("a helper of TestIntegrationBrokerAcrossUsers")
	}
	var req xRacerReq
	if err := json.Unmarshal([]byte(env), &req); err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t)
	sb.Root, sb.Protect = req.WS, req.Protect
	out, err := runRacer(stateDir(t), sb, req.Args)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Print(out)
}

// TestIntegrationBrokerAcrossUsers is TestIntegrationBrokerAcrossSandboxes's
// shape race with a root sandbox and a rootless one (uid 4242) on one
// workspace, each side both ways.
func TestIntegrationBrokerAcrossUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to start a rootless sandbox (uid " + rootlessUID + ") beside a root one")
	}
	for _, tool := range []string{"git", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("no " + tool)
		}
	}
	ws, mark := newSandbox(t).Root, filepath.Join(t.TempDir(), "pager-ran")
	headlessRepo(t, filepath.Join(ws, "r"))
	for _, d := range []string{filepath.Dir(ws), ws, filepath.Join(ws, "r")} {
		mode := os.FileMode(0o777)
		if d == filepath.Dir(ws) {
			mode = 0o755
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	pager := "[core]\n\tpager = touch " + mark + "; cat\n"
	runRacers(t, ws, []string{ws + "/**/.git/hooks", ws + "/**/.git/config"}, []racer{
		{xMkdirRefs, nil, false, ""}, {xRenameConfig, []string{pager, ""}, true, ""},
		{xMkdirRefs, nil, true, ""}, {xRenameConfig, []string{pager, ""}, false, ""},
	})
	if hostPagerRuns(t, filepath.Join(ws, "r"), mark) {
		t.Errorf("the host's git log in r ran the pager a sandbox planted")
	}
	assertNoWin(t, ws)
}

// hostPagerRuns runs the host's git log in dir on a terminal (git starts a
// pager only there) and reports whether the planted pager ran.
func hostPagerRuns(t *testing.T, dir, mark string) bool {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Log("no script(1): the host's git log is not run on a terminal")
		return false
	}
	cmd := exec.Command("script", "-qec", "git log -1", "/dev/null")
	cmd.Dir = dir
	cmd.Env = []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir), "TERM=dumb"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PAGER=") && !strings.HasPrefix(kv, "GIT_PAGER=") && !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, _ := cmd.CombinedOutput()
	t.Logf("host: git log in %s: %q", dir, out)
	_, err := os.Lstat(mark)
	return err == nil
}

// TestIntegrationBrokerAcrossSandboxes is the security property "the
// stateful rules hold when several sandboxes, each with its own broker,
// act on one workspace at once": a repository shape completed in one
// sandbox while another renames a core.pager config into it (with no
// config yet, and with a harmless config the completing broker checks
// and rewrites), and a directory moved to sub/.git by one sandbox while
// others add a config or a hooks directory to it. No racer ever sees the
// rule broken, the end state holds no guarded name, and the host's git
// log in the repository runs no pager.
func TestIntegrationBrokerAcrossSandboxes(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, restore := range []string{"", "[core]\n\tbare = true\n"} {
		name := "shape by mkdir refs against a config renamed in"
		if restore != "" {
			name = "config rewrite against a config renamed in"
		}
		t.Run(name, func(t *testing.T) {
			ws, mark := newSandbox(t).Root, filepath.Join(t.TempDir(), "pager-ran")
			headlessRepo(t, filepath.Join(ws, "r"))
			if restore != "" {
				writeFile(t, filepath.Join(ws, "r/config"), restore)
			}
			pager := "[core]\n\tpager = touch " + mark + "; cat\n"
			mk := racer{xMkdirRefs, nil, false, ""}
			rn := racer{xRenameConfig, []string{pager, restore}, false, ""}
			runRacers(t, ws, []string{ws + "/**/.git/hooks", ws + "/**/.git/config"}, []racer{mk, rn, mk, rn})
			if hostPagerRuns(t, filepath.Join(ws, "r"), mark) {
				t.Errorf("the host's git log in r ran the pager a sandbox planted")
			}
			if _, err := os.Lstat(filepath.Join(ws, "r/refs")); err == nil && strings.Contains(readOr(filepath.Join(ws, "r/config")), "pager") {
				t.Errorf("r is a repository with the planted pager in its config: %q", readOr(filepath.Join(ws, "r/config")))
			}
			assertNoWin(t, ws)
		})
	}
	// The file tools (mounts' Table.Write, behind the MCP write tool and
	// Files.Write), in a process of their own, against sandboxes: a
	// config written by the tools while a sandbox completes the shape, and
	// the shape completed by the tools (r/refs made as a write's parent)
	// while a sandbox renames a pager config in.
	t.Run("the file tools against sandboxes on one repository shape", func(t *testing.T) {
		ws, mark := newSandbox(t).Root, filepath.Join(t.TempDir(), "pager-ran")
		headlessRepo(t, filepath.Join(ws, "r"))
		pager := "[core]\n\tpager = touch " + mark + "; cat\n"
		runRacers(t, ws, []string{ws + "/**/.git/hooks", ws + "/**/.git/config"}, []racer{
			{xMkdirRefs, nil, false, ""}, {"tools config", []string{pager}, false, "config"},
			{xRenameConfig, []string{pager, ""}, false, ""}, {"tools refs", []string{pager}, false, "refs"},
		})
		if hostPagerRuns(t, filepath.Join(ws, "r"), mark) {
			t.Errorf("the host's git log in r ran the pager a sandbox or the tools planted")
		}
		assertNoWin(t, ws)
	})
	t.Run("rename walk against a tree changed meanwhile", func(t *testing.T) {
		ws := newSandbox(t).Root
		for _, d := range []string{"x/objects", "x/hookz", "sub"} {
			if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		writeFile(t, filepath.Join(ws, "x/HEAD"), "ref: refs/heads/main\n")
		writeFile(t, filepath.Join(ws, "x/hookz/pre-commit"), "#!/bin/sh\necho planted\n")
		runRacers(t, ws, []string{ws + "/**/.git/hooks", ws + "/**/.git/config"}, []racer{
			{xMoveTree, []string{"sub/.git", "hooks,config", "stop"}, false, ""},
			{xAddToTree, []string{"config"}, false, ""}, {xAddToTree, []string{"hooks"}, false, ""},
		})
		assertNoWin(t, ws)
		mustNotExist(t, filepath.Join(ws, "sub/.git/hooks"))
		mustNotExist(t, filepath.Join(ws, "sub/.git/config"))
	})
	// A name no lock covers, made in a tree another sandbox moves: what
	// the move carries is walked again after it and moved back, and a name
	// made after that walk is removed by its own broker; the mover may see
	// it for that moment (counted, see xMoveTree), the end state never
	// holds it.
	t.Run("rename walk against a file no lock covers", func(t *testing.T) {
		ws := newSandbox(t).Root
		for _, d := range []string{"x", "sub"} {
			if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		add := racer{xAddToTree, []string{"settings.json"}, false, ""}
		runRacers(t, ws, []string{ws + "/**/.vscode/settings.json"}, []racer{
			{xMoveTree, []string{"sub/.vscode", "settings.json", "count"}, false, ""}, add, add,
		})
		mustNotExist(t, filepath.Join(ws, "sub/.vscode/settings.json"))
		mustNotExist(t, filepath.Join(ws, "x/.vscode"))
		assertNoWin(t, ws)
	})
}

// headlessRepo makes r a bare repository with one commit whose refs
// directory and config are gone: HEAD and objects, the commit in
// packed-refs. A refs directory made there makes it a repository the
// host's git log shows the commit of, through the config's pager.
func headlessRepo(t *testing.T, r string) {
	t.Helper()
	hostGit(t, filepath.Dir(r), "init", "-q", "--bare", "-b", "main", r)
	tree := strings.TrimSpace(hostGit(t, r, "mktree"))
	commit := strings.TrimSpace(hostGit(t, r, "commit-tree", "-m", "one", tree))
	hostGit(t, r, "update-ref", "refs/heads/main", commit)
	hostGit(t, r, "pack-refs", "--all")
	for _, p := range []string{"refs", "config", "hooks"} {
		if err := os.RemoveAll(filepath.Join(r, p)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIntegrationBrokerLockHeldFailsClosed is the security property "a
// lock another process holds makes the broker refuse, never wait forever
// and never act unlocked": the command itself holds the flock of r (it
// can: flock is no brokered call) and completes r's shape with mkdir
// r/refs. The mkdir fails with EBUSY after xlock.Wait, the refusal is
// recorded with its path, r/refs is not made; once the lock is let go the
// same mkdir works.
func TestIntegrationBrokerLockHeldFailsClosed(t *testing.T) {
	sb := newSandbox(t)
	ws := sb.Root
	if err := os.MkdirAll(filepath.Join(ws, "r/objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "r/HEAD"), "ref: refs/heads/main\n")
	held := `
import errno, fcntl, os, sys
fd = os.open("r", os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
try:
    os.mkdir("r/refs")
except OSError as e:
    print("errno", errno.errorcode[e.errno])
    sys.exit(1)
print("made")
`
	out := run(t, sb, "", "python3", "-c", held)
	if out.stdout != "errno EBUSY\n" || out.res.FailureType != runner.FailureSandboxDenied ||
		out.res.BlockedPath != filepath.Join(ws, "r/refs") || !strings.Contains(out.res.FailureDetail, broker.Busy) {
		t.Fatalf("mkdir r/refs while the command holds r's lock: %q %+v", out.stdout, out.res)
	}
	mustNotExist(t, filepath.Join(ws, "r/refs"))
	if out := run(t, sb, "", "mkdir", "r/refs"); out.res.ExitCode != 0 {
		t.Fatalf("mkdir r/refs once the lock is let go: %+v %s", out.res, out.stderr)
	}
}

func assertNoWin(t *testing.T, ws string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(ws, "won")); err == nil {
		t.Fatalf("a sandbox saw a stateful rule broken across sandboxes:\n%s", b)
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readOr(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
