package cordon_test

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runnerlinux "github.com/cordon-run/cordon/runner/linux"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// hostToolsProject is a workspace-profile project (or profile) rooted at a
// fresh folder, run by the OS backend with a private state folder; edit
// adjusts the sandbox before the project is made.
func hostToolsProject(t *testing.T, profile string, edit func(sb *spec.Sandbox)) (*cordon.Sandbox, string) {
	t.Helper()
	testenv.RequireSandbox(t)
	r, err := runnerlinux.New(runner.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	cfg, err := spec.Profile(profile, ws)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sandbox.Limits.Timeout = 0
	if edit != nil {
		edit(&cfg.Sandbox)
	}
	s, err := cordon.NewProject(cfg, cordon.WithRunner(r)).Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	return s, ws
}

// runIn runs args in s and returns the result, stdout and stderr.
func runIn(t *testing.T, s *cordon.Sandbox, args ...string) (cordon.Result, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	res, err := s.Run(context.Background(), args, cordon.Stdout(&out), cordon.Stderr(&errb))
	if err != nil {
		t.Fatalf("Run %q: %v", args, err)
	}
	return res, out.String(), errb.String()
}

// goBinary is the go command of this host, or a skip.
func goBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"go", "/usr/local/go/bin/go", "/usr/lib/go/bin/go"} {
		if abs, err := exec.LookPath(p); err == nil {
			return abs
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no go command on this host (CI=true: failing instead of skipping)")
	}
	t.Skip("no go command on this host")
	return ""
}

// writeModuleProxy writes a GOPROXY=file:// folder serving one module,
// example.com/dep v1.0.0, and returns it.
func writeModuleProxy(t *testing.T) string {
	t.Helper()
	proxy := t.TempDir()
	v := filepath.Join(proxy, "example.com", "dep", "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/dep\n\ngo 1.21\n"
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for name, body := range map[string]string{"go.mod": gomod, "dep.go": "package dep\n\n// Hello greets.\nfunc Hello() string { return \"hello from dep\" }\n"} {
		w, err := zw.Create("example.com/dep@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"list": "v1.0.0\n", "v1.0.0.info": `{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`, "v1.0.0.mod": gomod, "v1.0.0.zip": zb.String()} {
		if err := os.WriteFile(filepath.Join(v, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return proxy
}

// TestIntegrationCachesGoBuild: a Go program with a dependency from a
// module proxy, built in two runs of the workspace profile: the first
// fills the sandbox's own caches (below CORDON_CACHE_DIR, owned by the
// caller), the second compiles nothing again and finds the module with
// the proxy switched off; the host's own Go caches are never mounted;
// cache clear removes the cache, Go's read-only module folders included;
// strict has no cache at all. Root, and rootless in hack/test-rootless.sh.
func TestIntegrationCachesGoBuild(t *testing.T) {
	goBin := goBinary(t)
	cacheDir := filepath.Join(t.TempDir(), "caches")
	t.Setenv("CORDON_CACHE_DIR", cacheDir)
	proxy := writeModuleProxy(t)
	env := map[string]string{
		"PATH": filepath.Dir(goBin) + ":" + spec.DefaultPath, "GOPROXY": "file://" + proxy,
		"GOSUMDB": "off", "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local", "GOTELEMETRY": "off",
	}
	s, ws := hostToolsProject(t, "workspace", func(sb *spec.Sandbox) {
		sb.Env.Set = env
		sb.Mounts = append(sb.Mounts, spec.Mount{Source: proxy, Target: proxy, Readonly: true})
	})
	for name, body := range map[string]string{
		"go.mod":  "module example.com/app\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n",
		"main.go": "package main\n\nimport \"example.com/dep\"\n\nfunc main() { println(dep.Hello()) }\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	host := exec.Command(goBin, "env", "GOCACHE", "GOMODCACHE")
	host.Env = os.Environ()
	if out, err := host.Output(); err == nil {
		for _, hp := range strings.Fields(string(out)) {
			for _, m := range s.Spec().Mounts {
				if strings.HasPrefix(m.Source+"/", hp+"/") || strings.HasPrefix(hp+"/", m.Source+"/") {
					t.Errorf("the host's Go cache %s is mounted: %+v", hp, m)
				}
			}
		}
	}
	build := []string{"sh", "-c", "go env GOCACHE GOMODCACHE && go build -v -o /tmp/app . && /tmp/app"}
	start := time.Now()
	res, out, errOut := runIn(t, s, build...)
	first := time.Since(start)
	if res.ExitCode != 0 || !strings.Contains(errOut, "hello from dep") {
		t.Fatalf("first build: %+v\n%s\n%s", res, out, errOut)
	}
	if !strings.HasPrefix(out, "/cordon/cache/go/build\n/cordon/cache/go/mod\n") {
		t.Errorf("go env inside = %q, want the sandbox's own caches", out)
	}
	if !strings.Contains(errOut, "example.com/dep") {
		t.Errorf("the first build compiled no dependency: %q", errOut)
	}
	mod := filepath.Join(cacheDir, "go", "mod", "example.com", "dep@v1.0.0", "dep.go")
	fi, err := os.Stat(mod)
	if err != nil {
		t.Fatalf("the module is not in the sandbox's cache: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() {
		t.Errorf("%s is owned by uid %d, not the caller %d", mod, st.Uid, os.Geteuid())
	}
	// The second run: no proxy, and nothing to compile again.
	env["GOPROXY"] = "off"
	start = time.Now()
	res, _, errOut = runIn(t, s, build...)
	second := time.Since(start)
	if res.ExitCode != 0 || !strings.Contains(errOut, "hello from dep") {
		t.Fatalf("second build: %+v\n%s", res, errOut)
	}
	if strings.Contains(errOut, "example.com/") {
		t.Errorf("the second build compiled again: %q", errOut)
	}
	t.Logf("first build %v, second %v", first.Round(time.Millisecond), second.Round(time.Millisecond))

	if err := cordon.ClearCaches("go"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(cacheDir, "go")); !os.IsNotExist(err) {
		t.Errorf("cache clear left the go cache: %v", err)
	}

	strict, _ := hostToolsProject(t, "strict", nil)
	for _, m := range strict.Spec().Mounts {
		if strings.HasPrefix(m.Target, spec.CacheTarget) {
			t.Errorf("strict mounts a cache: %+v", m)
		}
	}
	if res, out, errOut := runIn(t, strict, "/bin/sh", "-c", `test -z "$GOCACHE$npm_config_cache$PIP_CACHE_DIR" && ! test -e /cordon`); res.ExitCode != 0 {
		t.Errorf("strict sees a cache: %+v %s %s", res, out, errOut)
	}
}

// TestIntegrationToolchains: a toolchain below a test $HOME that PATH
// reaches (~/.cargo/bin, with ~/.rustup as RUSTUP_HOME) runs inside,
// read-only (a write fails and the host file is unchanged); a toolchain
// folder the deny list covers is not mounted and its command is refused
// with the reason; a command only on the host, outside the sandbox, is
// "not found" with the host path and the -v that mounts it. Root, and
// rootless in hack/test-rootless.sh.
func TestIntegrationToolchains(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	tool := filepath.Join(home, ".cargo", "bin", "mytool")
	denied := filepath.Join(home, "denied", "bin")
	hostbin := filepath.Join(base, "hostbin")
	for _, d := range []string{filepath.Dir(tool), filepath.Join(home, ".rustup"), denied, hostbin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho mytool ran\n"
	for _, p := range []string{tool, filepath.Join(denied, "dtool"), filepath.Join(hostbin, "hosttool")} {
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("PATH", strings.Join([]string{filepath.Dir(tool), denied, hostbin, spec.DefaultPath}, ":"))
	s, _ := hostToolsProject(t, "workspace", func(sb *spec.Sandbox) {
		sb.Deny = append(sb.Deny, filepath.Join(home, "denied"))
	})
	for _, m := range s.Spec().Mounts {
		if strings.HasPrefix(m.Source, filepath.Join(home, "denied")) || m.Source == home {
			t.Errorf("mounted %+v", m)
		}
	}
	res, out, errOut := runIn(t, s, "mytool")
	if res.ExitCode != 0 || out != "mytool ran\n" {
		t.Fatalf("mytool: %+v %q %q", res, out, errOut)
	}
	res, out, _ = runIn(t, s, "sh", "-c", `echo "$RUSTUP_HOME"; echo planted > "$1"`, "sh", tool)
	if res.ExitCode == 0 || out != filepath.Join(home, ".rustup")+"\n" {
		t.Errorf("RUSTUP_HOME or the write: %+v %q", res, out)
	}
	if b, _ := os.ReadFile(tool); string(b) != script {
		t.Errorf("the toolchain was changed from inside: %q", b)
	}
	res, _, _ = runIn(t, s, "dtool")
	if res.ExitCode != 127 || strings.Contains(res.FailureDetail, "-v ") || !strings.Contains(res.FailureDetail, filepath.Join(denied, "dtool")) {
		t.Errorf("dtool (denied): %+v", res)
	}
	want := "-v " + hostbin + ":" + hostbin + ":ro"
	res, _, _ = runIn(t, s, "sh", "-c", "hosttool")
	if res.ExitCode != 127 || !strings.Contains(res.FailureDetail, filepath.Join(hostbin, "hosttool")) || !strings.Contains(res.FailureDetail, want) {
		t.Errorf("hosttool: %+v, want the host path and %q", res, want)
	}
	// A session's execs: the toolchain runs, and both kinds of not found
	// (the exec itself, a shell's) carry the hint.
	sess, err := s.StartSession(context.Background())
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	defer sess.Close()
	var out2 bytes.Buffer
	if res, err := sess.Exec(context.Background(), []string{"mytool"}, cordon.Stdout(&out2)); err != nil || res.ExitCode != 0 || out2.String() != "mytool ran\n" {
		t.Errorf("session mytool: %+v %v %q", res, err, out2.String())
	}
	for _, args := range [][]string{{"hosttool"}, {"sh", "-c", "hosttool"}} {
		res, err := sess.Exec(context.Background(), args)
		if err != nil || res.ExitCode != 127 || !strings.Contains(res.FailureDetail, want) {
			t.Errorf("session %q: %+v %v, want %q", args, res, err, want)
		}
	}
}

// TestIntegrationCAVariables: SSL_CERT_FILE naming a file outside the
// sandbox is passed and the file mounted: readable, not writable (the
// host file is unchanged); the same file on the deny list is not mounted.
// Root, and rootless in hack/test-rootless.sh.
func TestIntegrationCAVariables(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "proxy-ca.pem")
	const pem = "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(ca, []byte(pem), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", ca)
	check := `printf '%s\n' "$SSL_CERT_FILE"; cat "$SSL_CERT_FILE"; if echo planted >> "$SSL_CERT_FILE"; then echo WROTE; fi`
	s, _ := hostToolsProject(t, "workspace", nil)
	res, out, errOut := runIn(t, s, "sh", "-c", check)
	if res.ExitCode != 0 || out != ca+"\n"+pem {
		t.Errorf("inside: %+v %q %q", res, out, errOut)
	}
	if b, _ := os.ReadFile(ca); string(b) != pem {
		t.Errorf("the CA file was changed from inside: %q", b)
	}
	denied, _ := hostToolsProject(t, "workspace", func(sb *spec.Sandbox) { sb.Deny = append(sb.Deny, ca) })
	for _, m := range denied.Spec().Mounts {
		if m.Source == ca {
			t.Errorf("a denied CA file is mounted: %+v", m)
		}
	}
	if _, out, _ := runIn(t, denied, "sh", "-c", check); strings.Contains(out, "BEGIN") {
		t.Errorf("a denied CA file is readable: %q", out)
	}
}
