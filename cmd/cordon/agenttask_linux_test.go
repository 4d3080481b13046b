package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestIntegrationAgentTaskDefaultProfile is the recorded agent task of
// issue 23, run as a harness runs it: the cordon binary, the default
// (workspace) profile and no config file, one warm session, and in it
// `git clone --recurse-submodules` of a local repository with a
// submodule, `go build` of a program whose dependency comes from a local
// module proxy (mounted read-only; no network), an edit, a second build,
// and `git commit`. It asserts that each step works, that the commit
// carries the host's git identity, and that the program built inside
// runs (inside, and on the host). It logs the second build's time inside
// against the same build on the host (the same user, the same steps,
// caches of its own), and their ratio; it asserts no time. Root, and
// rootless (uid 4242 through setpriv) in the same run.
func TestIntegrationAgentTaskDefaultProfile(t *testing.T) {
	goBin := agentGo(t)
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) { agentTask(t, u, goBin) })
	}
}

// agentGo is the host's go command, or a skip.
func agentGo(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"go", "/usr/local/go/bin/go", "/usr/lib/go/bin/go"} {
		if abs, err := exec.LookPath(p); err == nil {
			if _, err := exec.LookPath("git"); err == nil {
				return abs
			}
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no go or git on this host (CI=true: failing instead of skipping)")
	}
	t.Skip("no go or git on this host")
	return ""
}

// agentFixture is what the task works on: an upstream bare repository
// whose main branch has a submodule (lib, from a repository of its own),
// and a GOPROXY=file:// folder serving example.com/dep.
type agentFixture struct {
	dir, upstream, proxy string
}

func writeAgentFixture(t *testing.T, goBin string) agentFixture {
	t.Helper()
	// Readable by the rootless user: t.TempDir's parents are 0700.
	dir, err := os.MkdirTemp("", "cordon-agenttask-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := agentFixture{dir: dir, upstream: filepath.Join(dir, "app.git"), proxy: filepath.Join(dir, "proxy")}
	writeAgentProxy(t, f.proxy)

	gitEnv := []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=Up Stream", "GIT_AUTHOR_EMAIL=up@example.com",
		"GIT_COMMITTER_NAME=Up Stream", "GIT_COMMITTER_EMAIL=up@example.com"}
	hostSh(t, dir, gitEnv, `set -e
git init -q -b main lib.git.src && cd lib.git.src && echo 'package lib' > lib.go && git add . && git commit -qm lib && cd ..
git clone -q --bare lib.git.src lib.git
git init -q -b main src && cd src
printf 'module example.com/app\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n' > go.mod
printf 'package main\n\nimport "example.com/dep"\n\nfunc main() { println(dep.Hello(), "v1") }\n' > main.go
git -c protocol.file.allow=always submodule add -q "$0/lib.git" lib
git add . && git commit -qm app && cd ..
git clone -q --bare src app.git`, dir)
	// go.sum, made on the host (a repository holds it), so that the
	// build inside checks the module against it.
	gosum := filepath.Join(dir, "gosum")
	hostSh(t, filepath.Join(dir, "src"), append(gitEnv, "GOPROXY=file://"+f.proxy, "GOSUMDB=off", "GOFLAGS=-mod=mod -modcacherw",
		"GOMODCACHE="+filepath.Join(gosum, "mod"), "GOCACHE="+filepath.Join(gosum, "build"), "GOTOOLCHAIN=local", "GOTELEMETRY=off",
		"PATH="+filepath.Dir(goBin)+":/usr/bin:/bin"),
		`set -e; go mod download example.com/dep && go mod tidy && git add go.sum && git commit -qm go.sum && git push -q "$0" main`, f.upstream)
	_ = os.RemoveAll(gosum)
	return f
}

func writeAgentProxy(t *testing.T, proxy string) {
	t.Helper()
	v := filepath.Join(proxy, "example.com", "dep", "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/dep\n\ngo 1.21\n"
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for _, e := range [][2]string{{"go.mod", gomod}, {"dep.go", "package dep\n\n// Hello greets.\nfunc Hello() string { return \"hello from dep\" }\n"}} {
		w, err := zw.Create("example.com/dep@v1.0.0/" + e[0])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(e[1]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, e := range [][2]string{{"list", "v1.0.0\n"}, {"v1.0.0.info", `{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`},
		{"v1.0.0.mod", gomod}, {"v1.0.0.zip", zb.String()}} {
		if err := os.WriteFile(filepath.Join(v, e[0]), []byte(e[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// hostSh runs script with sh -c on the host as root, in dir, with env
// added; args are $0 and on. It fails the test on an error.
func hostSh(t *testing.T, dir string, env []string, script string, args ...string) string {
	t.Helper()
	c := exec.Command("sh", append([]string{"-c", script}, args...)...)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("host: %s: %v\n%s", script, err, out)
	}
	return string(out)
}

// agentHome is the user's home: its .gitconfig holds the identity cordon
// carries in (and a hooksPath it must not).
func agentHome(t *testing.T, u *sessionUser) string {
	t.Helper()
	home := ""
	for _, a := range u.prefix {
		if h, ok := strings.CutPrefix(a, "HOME="); ok {
			home = h
		}
	}
	if home == "" { // root: a home of the test's own, and its caches
		home = t.TempDir()
		u.env = append(u.env, "HOME="+home, "XDG_CACHE_HOME=", "XDG_CONFIG_HOME=", "CORDON_CACHE_DIR="+filepath.Join(home, "caches"))
		// Go's module folders are read-only: writable again, so that a
		// caller who is not root can remove the home.
		t.Cleanup(func() {
			_ = filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					_ = os.Chmod(p, 0o755)
				}
				return nil
			})
		})
	}
	writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Host Person\n\temail = host@example.com\n[core]\n\thooksPath = /nonexistent\n")
	return home
}

// asUser runs script with sh -c on the host as u (root, or uid 4242
// through setpriv), in dir, with env; it returns the output and the time
// it took.
func asUser(t *testing.T, u sessionUser, dir string, env []string, script string) (string, time.Duration) {
	t.Helper()
	argv := append(append(append(append([]string{}, u.prefix...), "env"), env...), "sh", "-c", script)
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	c.Env = append(os.Environ(), u.env...)
	start := time.Now()
	out, err := c.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("host as %s: %s: %v\n%s", u.name, script, err, out)
	}
	return string(out), took
}

// agentExec runs `cordon exec NAME -- sh -c SCRIPT` as a harness would and
// fails the test unless it exits 0; it returns stdout+stderr and the time.
func agentExec(t *testing.T, u sessionUser, name, script string) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	r := u.run(t, "", "exec", name, "--", "sh", "-c", script)
	took := time.Since(start)
	if r.code != 0 {
		t.Fatalf("cordon exec %s: exit %d\n%s%s", script, r.code, r.stdout, r.stderr)
	}
	return r.stdout + r.stderr, took
}

// The task's steps, as an agent types them. git refuses a file://
// submodule unless protocol.file.allow is always (git 2.38.1 and later,
// inside and on the host alike); the agent says so on the command line,
// since a sandbox's git reads no more of the caller's config than the
// identity.
const (
	agentClone = `git -c protocol.file.allow=always clone -q --recurse-submodules "file://%s" app && git -C app submodule status`
	agentBuild = `cd app && go build -o bin/app . && ./bin/app`
	agentEdit  = `cd app && sed -i 's/"v[0-9]*"/"v%d"/' main.go`
)

func agentTask(t *testing.T, u sessionUser, goBin string) {
	f := writeAgentFixture(t, goBin)
	if u.prefix != nil { // the rootless user's own repositories (git refuses another's)
		hostSh(t, f.dir, nil, `chown -R 4242:4242 "$0"`, f.dir)
	}
	agentHome(t, &u)
	goEnv := []string{"PATH=" + filepath.Dir(goBin) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "GOPROXY=file://" + f.proxy}

	// The host's run of the same task, as the same user, with Go caches
	// of its own (cold, as the sandbox's are), for the timings.
	hostWS := filepath.Join(f.dir, "host-"+u.name)
	if err := os.Mkdir(hostWS, 0o755); err != nil || os.Chmod(hostWS, 0o777) != nil {
		t.Fatal(err)
	}
	hostEnv := append(slices.Clone(goEnv), "GOCACHE="+filepath.Join(hostWS, ".gocache"), "GOMODCACHE="+filepath.Join(hostWS, ".gomod"), "GOFLAGS=-modcacherw")
	asUser(t, u, hostWS, hostEnv, fmt.Sprintf(agentClone, f.upstream))
	if out, _ := asUser(t, u, hostWS, hostEnv, agentBuild); !strings.Contains(out, "hello from dep v1") {
		t.Fatalf("the host's build: %q", out)
	}

	name := uniqueName("agent")
	args := []string{"session", "start", "--name", name, "-v", f.dir + ":" + f.dir + ":ro"}
	for _, e := range goEnv {
		args = append(args, "-e", e)
	}
	r := u.run(t, "", args...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != name {
		t.Fatalf("session start: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	t.Cleanup(func() { u.run(t, "", "session", "stop", name) })

	out, _ := agentExec(t, u, name, fmt.Sprintf(agentClone, f.upstream))
	if !strings.Contains(out, " lib (") {
		t.Fatalf("clone --recurse-submodules: no submodule checked out: %q", out)
	}
	out, first := agentExec(t, u, name, agentBuild)
	if !strings.Contains(out, "hello from dep v1") {
		t.Fatalf("the first build inside: %q", out)
	}
	// The edit, the second build: timed inside and on the host, a few
	// times each, interleaved.
	var inside, onHost []time.Duration
	for i := 2; i <= 6; i++ {
		agentExec(t, u, name, fmt.Sprintf(agentEdit, i))
		out, took := agentExec(t, u, name, agentBuild)
		if want := fmt.Sprintf("hello from dep v%d", i); !strings.Contains(out, want) {
			t.Fatalf("build %d inside: %q, want %q", i, out, want)
		}
		inside = append(inside, took)
		asUser(t, u, hostWS, hostEnv, fmt.Sprintf(agentEdit, i))
		out, took = asUser(t, u, hostWS, hostEnv, agentBuild)
		if !strings.Contains(out, fmt.Sprintf("v%d", i)) {
			t.Fatalf("build %d on the host: %q", i, out)
		}
		onHost = append(onHost, took)
	}
	out, _ = agentExec(t, u, name, `cd app && git commit -qam "say v6" && git log -1 --format='%an <%ae>|%cn <%ce>|%s'`)
	if !strings.Contains(out, "Host Person <host@example.com>|Host Person <host@example.com>|say v6") {
		t.Fatalf("git commit inside: %q", out)
	}

	// On the host: the commit, with the host's identity, over upstream's;
	// the program built inside runs here too.
	app := filepath.Join(u.ws, "app")
	if got, _ := asUser(t, u, app, nil, "git log -2 --format='%an <%ae>|%s'"); got != "Host Person <host@example.com>|say v6\nUp Stream <up@example.com>|go.sum\n" {
		t.Errorf("the host's git log: %q", got)
	}
	if got, _ := asUser(t, u, app, nil, "./bin/app"); !strings.Contains(got, "hello from dep v6") {
		t.Errorf("the program built inside, run on the host: %q", got)
	}
	ratios := make([]string, len(inside))
	for i := range inside {
		ratios[i] = fmt.Sprintf("%.2f", float64(inside[i])/float64(onHost[i]))
	}
	slices.Sort(inside)
	slices.Sort(onHost)
	med := func(d []time.Duration) time.Duration { return d[len(d)/2] }
	t.Logf("%s: first build inside %v; the build after an edit, inside (cordon exec) %v, on the host %v; ratio per pair %v, of the medians %.2f",
		u.name, first.Round(time.Millisecond), inside, onHost, ratios, float64(med(inside))/float64(med(onHost)))
}
