package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/testenv"
)

// TestInitWritesStarterConfig: `cordon init` is a user command (never
// libcontainer's hidden init): it writes a commented cordon.yaml that
// loads, and refuses to overwrite one.
func TestInitWritesStarterConfig(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, dir, "init")
	if r.code != 0 || strings.Contains(r.stderr+r.stdout, "_LIBCONTAINER") || !strings.Contains(r.stdout, "cordon trust") {
		t.Fatalf("cordon init: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	cfg := filepath.Join(dir, "cordon.yaml")
	data, err := os.ReadFile(cfg)
	if err != nil || !strings.Contains(string(data), "# ") {
		t.Fatalf("no commented cordon.yaml: %v %q", err, data)
	}
	if r := runCLI(t, dir, "explain", "--config", cfg); r.code != 0 {
		t.Fatalf("the starter config does not load: exit %d %q", r.code, r.stderr)
	}
	if r := runCLI(t, dir, "init"); r.code != exitConfig || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("second cordon init: exit %d %q; want 2 naming --force", r.code, r.stderr)
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(data) {
		t.Fatal("the second cordon init changed the file")
	}
}

// TestVersionAndHelp: --version and version print the module version;
// `cordon help run` prints run's help.
func TestVersionAndHelp(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := runCLI(t, t.TempDir(), args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "cordon ") || !strings.Contains(r.stdout, "go1.") {
			t.Errorf("cordon %v: exit %d %q", args, r.code, r.stdout)
		}
	}
	r := runCLI(t, t.TempDir(), "help", "run")
	if r.code != 0 || !strings.Contains(r.stderr+r.stdout, "usage: cordon run") || !strings.Contains(r.stderr+r.stdout, "-cwd") {
		t.Errorf("cordon help run: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, t.TempDir(), "help", "nosuch"); r.code != exitConfig || !strings.Contains(r.stderr, `unknown command "nosuch"`) {
		t.Errorf("cordon help nosuch: exit %d %q", r.code, r.stderr)
	}
	// Help goes to stdout with exit 0 everywhere, and asks nothing else
	// (session stop --help once tried to stop a session named --help).
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"run", "-h", "--", "false"}, {"explain", "-h"},
		{"check", "--help"}, {"mcp", "--help"}, {"bundle", "--help"}, {"session", "--help"}, {"session", "start", "--help"},
		{"session", "stop", "--help"}, {"session", "list", "-h"}, {"trust", "--help"}, {"doctor", "--help"}} {
		r := runCLI(t, t.TempDir(), args...)
		if r.code != 0 || !strings.Contains(r.stdout, "usage:") || !strings.Contains(r.stdout, "cordon "+args[0]) && args[0] != "--help" || r.stderr != "" {
			t.Errorf("cordon %v: exit %d stdout %q stderr %q; want 0 and the usage on stdout only", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestTrustListRevoke: --list shows each trusted config and whether it
// changed; --revoke ends a trust, and a run then refuses the config.
func TestTrustListRevoke(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CORDON_TRUST_FILE", filepath.Join(t.TempDir(), "trusted"))
	writeFile(t, filepath.Join(dir, "cordon.yaml"), "sandbox:\n  root: .\n")
	if r := runCLI(t, dir, "trust"); r.code != 0 {
		t.Fatalf("trust: %d %q", r.code, r.stderr)
	}
	if r := runCLI(t, dir, "trust", "--list"); r.code != 0 || !strings.Contains(r.stdout, "trusted  "+filepath.Join(dir, "cordon.yaml")) {
		t.Fatalf("trust --list: %d %q", r.code, r.stdout)
	}
	if r := runCLI(t, dir, "trust", "--revoke"); r.code != 0 || !strings.Contains(r.stdout, "revoked") {
		t.Fatalf("trust --revoke: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, dir, "trust", "--list"); !strings.Contains(r.stdout, "no trusted configs") {
		t.Fatalf("after --revoke: %q", r.stdout)
	}
	if r := runCLI(t, dir, "explain"); r.code != exitConfig || !strings.Contains(r.stderr, "not trusted") {
		t.Fatalf("a revoked config was used: %d %q", r.code, r.stderr)
	}
}

// TestCompletionBash sources the bash script and completes commands, a
// command's flags, profile names and session subcommands, as bash would
// at a prompt.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}

	script := `source <(cordon completion bash)
COMP_WORDS=(cordon ru); COMP_CWORD=1; _cordon; echo "1:${COMPREPLY[*]}"
COMP_WORDS=(cordon run --re); COMP_CWORD=2; _cordon; echo "2:${COMPREPLY[*]}"
COMP_WORDS=(cordon trust --r); COMP_CWORD=2; _cordon; echo "3:${COMPREPLY[*]}"
COMP_WORDS=(cordon run --profile s); COMP_CWORD=3; _cordon; echo "4:${COMPREPLY[*]}"
COMP_WORDS=(cordon session k); COMP_CWORD=2; _cordon; echo "5:${COMPREPLY[*]}"`
	cmd := exec.Command(bash, "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(cordonBin(t))+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	want := "1:run\n2:--readonly --report\n3:--revoke\n4:strict\n5:kill\n"
	if err != nil || string(out) != want {
		t.Fatalf("completion: %v %q; want %q", err, out, want)
	}
	for _, sh := range []string{"zsh", "fish"} {
		if r := runCLI(t, t.TempDir(), "completion", sh); r.code != 0 || !strings.Contains(r.stdout, "cordon") {
			t.Errorf("completion %s: %d %q", sh, r.code, r.stderr)
		}
	}
	if r := runCLI(t, t.TempDir(), "completion", "tcsh"); r.code != exitConfig {
		t.Errorf("completion tcsh: exit %d, want 2", r.code)
	}
}

// TestDoctorExitCode: doctor exits 1 exactly when a capability the
// default profile needs is missing: a build without libseccomp cannot run
// anything and says so; this build's exit code agrees with its own table.
func TestDoctorExitCode(t *testing.T) {
	r := runCLI(t, t.TempDir(), "doctor", "--json")
	var caps []struct {
		Name     string `json:"name"`
		OK       bool   `json:"ok"`
		Required bool   `json:"required"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &caps); err != nil {
		t.Fatalf("doctor --json: %v %q", err, r.stdout)
	}
	want := 0
	for _, c := range caps {
		if c.Required && !c.OK {
			want = 1
		}
	}
	if r.code != want {
		t.Fatalf("doctor exit %d, want %d for %+v", r.code, want, caps)
	}
	// A build without libseccomp is a second link of the whole binary
	// after every change: the quick loop leaves it out.
	testenv.SkipIfShort(t, "links a second cordon without libseccomp")
	nosec := testenv.CordonBinary(t, testenv.NoSeccomp)
	cmd := exec.Command(nosec, "doctor")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "cannot run here: seccomp") {
		t.Fatalf("doctor of a build without libseccomp: %v %q; want exit 1 naming seccomp", err, stderr.String())
	}
}

// TestLimitFlagsValidated: the limit flags go through the validator
// cordon.yaml's limits use: --pids 0, --timeout 0s and --memory 10 exit 2
// naming the flag, the problem and the fix, before anything runs, and the
// same value in cordon.yaml is refused with the same problem.
func TestLimitFlagsValidated(t *testing.T) {
	ws := t.TempDir()
	marker := filepath.Join(ws, "ran")
	for _, tc := range []struct{ flag, value, key, problem string }{
		{"--pids", "0", "pids", "must be above zero, not 0"},
		{"--timeout", "0s", "timeout", `must be above zero, not "0s"`},
		{"--memory", "10", "memory", "is below the smallest memory limit a sandbox can start with (6MiB)"},
		{"--memory", "0", "memory", `must be above zero, not "0"`},
	} {
		r := runCLI(t, ws, "run", "--profile", "workspace", tc.flag, tc.value, "--", "touch", marker)
		if r.code != exitConfig || !strings.Contains(r.stderr, tc.flag+" "+tc.value+": "+tc.problem) || !strings.Contains(r.stderr, "fix: ") {
			t.Errorf("%s %s: exit %d %q; want 2 naming the flag, %q and the fix", tc.flag, tc.value, r.code, r.stderr, tc.problem)
		}
		if fileExists(marker) {
			t.Fatalf("%s %s: the command ran", tc.flag, tc.value)
		}
		cfg := filepath.Join(t.TempDir(), "c.yaml")
		writeFile(t, cfg, "sandbox:\n  root: "+ws+"\n  limits:\n    "+tc.key+": "+tc.value+"\n")
		if r := runCLI(t, ws, "explain", "--config", cfg); r.code != exitConfig || !strings.Contains(r.stderr, "sandbox.limits."+tc.key+" (line 4): "+tc.problem) {
			t.Errorf("%s: %s in cordon.yaml: exit %d %q; want the same problem", tc.key, tc.value, r.code, r.stderr)
		}
	}
}

// TestReadmePythonHelper runs the Python helper of docs/harness.md as printed: with
// a worker whose timeout is lower than any fixed --timeout, a run must
// still go through (the helper passes --timeout only when asked).
func TestReadmePythonHelper(t *testing.T) {
	testenv.RequireSandbox(t)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	readme, err := os.ReadFile("../../docs/harness.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```python\n")
	block, _, _ = strings.Cut(block, "\nout, err, r = ")
	if !ok || !strings.Contains(block, "def sandboxed(") {
		t.Fatal("the README has no Python helper")
	}
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "cordon.yaml"), "sandbox:\n  root: .\n  limits: {timeout: 1m}\n")
	writeFile(t, filepath.Join(ws, "agents", "quick.worker.yaml"), "sandbox:\n  limits: {timeout: 5s}\n")
	script := block + `
out, err, r = sandboxed(["sh", "-c", "echo hi"], worker="agents/quick.worker.yaml")
print(r["failure_type"], r["exit_code"], out.strip(), err.strip())
`
	t.Setenv("CORDON_TRUST_FILE", filepath.Join(t.TempDir(), "trusted"))
	if r := runCLI(t, ws, "trust"); r.code != 0 {
		t.Fatalf("trust the test config: %q", r.stderr)
	}
	cmd := exec.Command(python, "-c", script)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(cordonBin(t))+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(out)), "none 0 hi") {
		t.Fatalf("the README's helper with a 5s worker: %v %q", err, out)
	}
}
