package darwin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

func TestNewOffMacOS(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("New works on macOS")
	}
	r, err := New()
	if !errors.Is(err, ErrUnsupported) || r != nil {
		t.Fatalf("New() = %v, %v; want nil, ErrUnsupported", r, err)
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		fileSize int64
		want     []string
		err      error
	}{
		{"plain", []string{"ls", "-l"}, 0, []string{SandboxExec, "-p", "P", "ls", "-l"}, nil},
		{"hostile args stay arguments", []string{"sh", "-c", "echo $HOME; rm -rf /"}, 0, []string{SandboxExec, "-p", "P", "sh", "-c", "echo $HOME; rm -rf /"}, nil},
		{"file size", []string{"make"}, 100 << 20, []string{"/bin/sh", "-c", fsizeScript, "cordon-fsize", "204800", SandboxExec, "-p", "P", "make"}, nil},
		{"file size below a block", []string{"make"}, 100, []string{"/bin/sh", "-c", fsizeScript, "cordon-fsize", "0", SandboxExec, "-p", "P", "make"}, nil},
		{"no command", nil, 0, nil, ErrBadRequest},
		{"empty command", []string{""}, 0, nil, ErrBadRequest},
		{"looks like an option", []string{"-f", "/etc/passwd"}, 0, nil, ErrBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := commandLine("P", tt.args, tt.fileSize)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestSecurityFileSizeLimit runs the RLIMIT_FSIZE wrapper with this host's
// /bin/sh: the limit is set soft and hard, a larger write fails and leaves
// no more than the limit on disk, and the command cannot raise its limit.
func TestSecurityFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "big")
	wrap := func(blocks string, script string) *exec.Cmd {
		return exec.Command("/bin/sh", "-c", fsizeScript, "cordon-fsize", blocks, "/bin/sh", "-c", script)
	}
	got, err := wrap("8", "ulimit -S -f; ulimit -H -f").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "8\n8\n" {
		t.Fatalf("limits inside = %q, want soft and hard 8 blocks", got)
	}
	if err := wrap("8", "head -c 8192 /dev/zero > "+out).Run(); err == nil {
		t.Error("writing 8192 bytes under a 4096-byte limit succeeded")
	}
	if fi, err := os.Stat(out); err == nil && fi.Size() > 4096 {
		t.Errorf("the file grew to %d bytes, over the 4096-byte limit", fi.Size())
	}
	if err := wrap("8", "ulimit -H -f 16").Run(); err == nil {
		t.Error("the command raised its own hard limit")
	}
	if err := wrap("8", "ulimit -S -f 16").Run(); err == nil {
		t.Error("the command raised its soft limit above the hard one")
	}
	// The limit's argument is a positional parameter, never script.
	if err := wrap("8; touch "+filepath.Join(dir, "injected"), "true").Run(); err == nil {
		t.Error("a malformed block count was accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "injected")); err == nil {
		t.Error("the block count was run as shell code")
	}
}

func TestProcessEnv(t *testing.T) {
	host := map[string]string{"PATH": "/opt/bin:/usr/bin", "LANG": "C.UTF-8", "SECRET": "s3cret", "HOME": "/Users/dev"}
	lookup := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	tests := []struct {
		name string
		env  spec.Env
		want []string
	}{
		{"defaults", spec.Env{}, []string{"HOME=/tmp/run", "PATH=" + DefaultPath, "TMPDIR=/tmp/run"}},
		{"pass", spec.Env{Pass: []string{"PATH", "LANG", "MISSING"}}, []string{"HOME=/tmp/run", "LANG=C.UTF-8", "PATH=/opt/bin:/usr/bin", "TMPDIR=/tmp/run"}},
		{"set wins", spec.Env{Pass: []string{"LANG"}, Set: map[string]string{"LANG": "fr_FR", "FOO": "bar", "TMPDIR": "/x"}}, []string{"FOO=bar", "HOME=/tmp/run", "LANG=fr_FR", "PATH=" + DefaultPath, "TMPDIR=/x"}},
		{"host home only when passed", spec.Env{Pass: []string{"HOME"}}, []string{"HOME=/Users/dev", "PATH=" + DefaultPath, "TMPDIR=/tmp/run"}},
		{"the proxy's variables win", spec.Env{Set: map[string]string{"HTTPS_PROXY": "http://elsewhere:3128", "NO_PROXY": "*"}},
			[]string{"HOME=/tmp/run", "HTTPS_PROXY=http://cordon:k@127.0.0.1:5", "NO_PROXY=", "PATH=" + DefaultPath, "TMPDIR=/tmp/run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var proxy []string
			if tt.name == "the proxy's variables win" {
				proxy = []string{"HTTPS_PROXY=http://cordon:k@127.0.0.1:5", "NO_PROXY="}
			}
			got := processEnv(&spec.Sandbox{Env: tt.env}, "/tmp/run", lookup, proxy...)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
			for _, kv := range got {
				if strings.Contains(kv, "s3cret") {
					t.Error("an unlisted host variable leaked")
				}
			}
		})
	}
}

func TestWithTempDirAndWorkDir(t *testing.T) {
	sb := workspaceSandbox()
	run := withTempDir(sb, "/private/var/folders/x/T/cordon-1")
	if len(sb.Mounts) != 0 {
		t.Fatal("withTempDir changed the caller's sandbox")
	}
	if got := run.Mounts[len(run.Mounts)-1]; got.Source != got.Target || got.Readonly {
		t.Errorf("temp mount = %+v, want a read-write mount at its own path", got)
	}
	src, err := Profile(run, ProfileOptions{Canon: fakeCanon})
	if err != nil {
		t.Fatal(err)
	}
	if p := mustRead(t, src, DefaultTag); !p.allows(t, "file-write-create", "/private/var/folders/x/T/cordon-1/f") {
		t.Error("the private temporary directory is not writable")
	}
	tests := []struct {
		req  runner.Request
		want string
	}{
		{runner.Request{Sandbox: sb, Dir: "/Users/dev/proj/src"}, "/Users/dev/proj/src"},
		{runner.Request{Sandbox: sb}, "/Users/dev/proj"},
		{runner.Request{Sandbox: &spec.Sandbox{}}, "/tmp/run"},
	}
	for _, tt := range tests {
		if got := workDir(tt.req, "/tmp/run"); got != tt.want {
			t.Errorf("workDir = %q, want %q", got, tt.want)
		}
	}
}

func TestLogShowArgs(t *testing.T) {
	start := time.Date(2025, 3, 1, 10, 0, 5, 0, time.Local)
	got := logShowArgs("cordon-0123456789abcdef", start)
	want := []string{"show", "--style", "ndjson", "--info", "--start", "2025-03-01 10:00:05", "--predicate", `eventMessage CONTAINS "cordon-0123456789abcdef"`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestClassify(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	buildTree(t, base, "file ws/.env", "file ws/src/a.go", "file outside/x")
	sb := &spec.Sandbox{
		Root:             ws,
		Deny:             []string{ws + "/.env"},
		Protect:          protectAll(ws, spec.DefaultProtect),
		System:           spec.System{Kind: spec.SystemHost},
		RequireOSSandbox: true,
		Limits:           spec.Limits{Timeout: 30 * time.Second},
	}
	table, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	netSb := sb.Clone()
	netSb.Network = spec.Network{Enabled: true}
	allowSb := sb.Clone()
	allowSb.Network = spec.Network{Enabled: true, Allow: []string{"github.com:443", "*.pypi.org"}}
	refused := netguard.Event{Proto: "tcp", Host: "github.io", HostFrom: netguard.FromConnect, Port: 443, Decision: netguard.Deny, Reason: netguard.ReasonNotAllowed,
		Detail: "github.io:443 is not in the allow list [github.com:443, *.pypi.org]"}
	tests := []struct {
		name    string
		sb      *spec.Sandbox
		o       outcome
		code    int
		ft      runner.FailureType
		blocked string
		detail  string
	}{
		{"success", sb, outcome{}, 0, runner.FailureNone, "", ""},
		{"start failure", sb, outcome{StartErr: errors.New("fork: resource temporarily unavailable")}, 125, runner.FailureSetupError, "", "fork"},
		{"timeout", sb, outcome{TimedOut: true, ExitCode: 137, Signal: "killed"}, 124, runner.FailureTimeout, "", "30s"},
		{"canceled", sb, outcome{Canceled: true, ExitCode: 137}, 137, runner.FailureProcessError, "", "canceled"},
		{"plain failure", sb, outcome{ExitCode: 1, Stderr: "make: *** [all] Error 1\n"}, 1, runner.FailureProcessError, "", "status 1"},
		{"killed by a signal", sb, outcome{ExitCode: 139, Signal: "segmentation fault"}, 139, runner.FailureProcessError, "", "segmentation fault"},
		{"profile refused", sb, outcome{ExitCode: 65, Stderr: "sandbox-exec: unbound variable: foo\n"}, 125, runner.FailureSetupError, "", "unbound variable"},
		{"nested sandbox", sb, outcome{ExitCode: 71, Stderr: "sandbox-exec: sandbox_apply: Operation not permitted\n"}, 125, runner.FailureSetupError, "", "sandbox_apply"},
		{"command not found", sb, outcome{ExitCode: 71, Stderr: "sandbox-exec: execvp() of 'nosuch' failed: No such file or directory\n"}, 127, runner.FailureProcessError, "", "command not found"},
		{"command not runnable", sb, outcome{ExitCode: 71, Stderr: "sandbox-exec: execvp() of './x' failed: Permission denied\n"}, 126, runner.FailureProcessError, "", "cannot run"},
		{"command denied", sb, outcome{ExitCode: 71, Stderr: "sandbox-exec: execvp() of '" + base + "/outside/x' failed: Operation not permitted\n"}, 126, runner.FailureSandboxDenied, base + "/outside/x", "outside the sandbox"},
		{"protected write", sb, outcome{ExitCode: 1, Stderr: "touch: " + ws + "/.git/hooks/pre-commit: Operation not permitted\n"}, 1, runner.FailureSandboxDenied, ws + "/.git/hooks/pre-commit", "protected path"},
		{"system write", sb, outcome{ExitCode: 1, Stderr: "bash: /etc/hosts: Operation not permitted\n"}, 1, runner.FailureSandboxDenied, "/etc/hosts", "read-only"},
		{"outside read", sb, outcome{ExitCode: 1, Stderr: "cat: " + base + "/outside/x: Operation not permitted\n"}, 1, runner.FailureSandboxDenied, base + "/outside/x", "readable:"},
		{"relative deny", sb, outcome{ExitCode: 1, Cwd: ws, Stderr: "PermissionError: [Errno 1] Operation not permitted: '.env'\n"}, 1, runner.FailureSandboxDenied, ws + "/.env", "deny list"},
		{"allowed path is not a denial", sb, outcome{ExitCode: 1, Stderr: "touch: " + ws + "/src/a.go: Operation not permitted\n"}, 1, runner.FailureProcessError, "", "status 1"},
		{"network off", sb, outcome{ExitCode: 6, Stderr: "curl: (6) Could not resolve host: example.com\n"}, 6, runner.FailureSandboxDenied, "", "network"},
		{"network on", netSb, outcome{ExitCode: 6, Stderr: "curl: (6) Could not resolve host: example.com\n"}, 6, runner.FailureProcessError, "", "status 6"},
		{"log names the path", sb, outcome{ExitCode: 1, Stderr: "ls: fts_read: Operation not permitted\n",
			LogDenials: []Denial{{PID: 5, Process: "ls", Operation: "file-read-data", Path: base + "/outside"}}}, 1, runner.FailureSandboxDenied, base + "/outside", "outside the sandbox"},
		{"log names a unix socket", sb, outcome{ExitCode: 1, Stderr: "error: connect: Operation not permitted\n",
			LogDenials: []Denial{{PID: 5, Process: "docker", Operation: "network-outbound", Path: "/private/var/run/docker.sock"}}}, 1, runner.FailureSandboxDenied, "/private/var/run/docker.sock", "Unix sockets included"},
		// The proxy's own record types the failure, never the command's
		// words.
		{"proxy denial", allowSb, outcome{ExitCode: 56, Stderr: "curl: (56) CONNECT tunnel failed, response 403\n", NetDenials: []netguard.Event{refused}, NetDenialCount: 3},
			56, runner.FailureNetworkDenied, "", "github.io:443 is not in the allow list [github.com:443, *.pypi.org] (and 2 more network denials)"},
		{"proxy denial of a command that succeeded", allowSb, outcome{NetDenials: []netguard.Event{refused}, NetDenialCount: 1}, 0, runner.FailureNone, "", ""},
		{"the command's words alone", allowSb, outcome{ExitCode: 1, Stderr: "cordon: network_denied: github.io:443 is not in the allow list [github.com:443, *.pypi.org]\n"},
			1, runner.FailureProcessError, "", "status 1"},
		{"a client that ignored the proxy", allowSb, outcome{ExitCode: 255, Stderr: "ssh: connect to host github.com port 22: Operation not permitted\n",
			LogDenials: []Denial{{PID: 5, Process: "ssh", Operation: "network-outbound"}}}, 255, runner.FailureSandboxDenied, "", "did not use it"},
		{"ssh resolving a name itself", allowSb, outcome{ExitCode: 255, Stderr: "ssh: Could not resolve hostname github.com: nodename nor servname provided, or not known\r\n"},
			255, runner.FailureSandboxDenied, "", "names are resolved by the proxy"},
		{"log noise without an EPERM is ignored", sb, outcome{ExitCode: 1, Stderr: "test failed\n",
			LogDenials: []Denial{{PID: 5, Process: "python3", Operation: "file-read-data", Path: "/Users/u/.CFUserTextEncoding"}}}, 1, runner.FailureProcessError, "", "status 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := classify(tt.sb, []string{"memory limit (1GiB): not enforced"}, table, tt.sb.Limits.Timeout, tt.o)
			if res.ExitCode != tt.code || res.FailureType != tt.ft || res.BlockedPath != tt.blocked {
				t.Fatalf("got exit %d %s blocked %q (%s); want %d %s %q", res.ExitCode, res.FailureType, res.BlockedPath, res.FailureDetail, tt.code, tt.ft, tt.blocked)
			}
			if !strings.Contains(res.FailureDetail, tt.detail) {
				t.Errorf("detail %q does not contain %q", res.FailureDetail, tt.detail)
			}
			if res.Backend != BackendName || res.Sandbox == nil || len(res.Unenforced) != 1 {
				t.Errorf("result misses backend, summary or unenforced: %+v", res)
			}
		})
	}
}

func TestProcTracker(t *testing.T) {
	// cordon is 100; the run's root is 200 in group 200.
	table := func(extra ...procInfo) []procInfo {
		return append([]procInfo{
			{PID: 1, PPID: 0, PGID: 1},
			{PID: 100, PPID: 50, PGID: 100},
			{PID: 200, PPID: 100, PGID: 200, Start: 1},
			{PID: 201, PPID: 200, PGID: 200, Start: 2},  // child
			{PID: 202, PPID: 201, PGID: 202, Start: 3},  // grandchild in its own group
			{PID: 300, PPID: 1, PGID: 300, Start: 4},    // unrelated daemon
			{PID: 301, PPID: 300, PGID: 300, Start: 5},  // its child
			{PID: 400, PPID: 1, PGID: 200, Start: 6},    // orphan still in the run's group
			{PID: 500, PPID: 100, PGID: 100, Start: 7},  // cordon's other child
			{PID: 600, PPID: 1, PGID: 600, Start: 8},    // setsid daemon, parent gone
			{PID: 601, PPID: 600, PGID: 600, Start: 9},  // its child
			{PID: 700, PPID: 1, PGID: 700, Start: 10},   // pid reused later
			{PID: 800, PPID: 1, PGID: 800, Start: 11},   // unrelated
			{PID: 900, PPID: 200, PGID: 900, Start: 12}, // another child of the root
			{PID: 901, PPID: 900, PGID: 901, Start: 13}, // double fork in progress
			{PID: 902, PPID: 901, PGID: 902, Start: 14},
		}, extra...)
	}
	pids := func(ps []procInfo) []int {
		var out []int
		for _, p := range ps {
			out = append(out, p.PID)
		}
		return out
	}
	tr := newProcTracker(200, 200, 100)
	if got, want := pids(tr.members(table())), []int{200, 201, 202, 400, 900, 901, 902}; !reflect.DeepEqual(got, want) {
		t.Fatalf("members = %v, want %v", got, want)
	}
	// A scan while 600 was still the root's child records it...
	tr.observe([]procInfo{{PID: 200, PPID: 100, PGID: 200, Start: 1}, {PID: 600, PPID: 200, PGID: 600, Start: 8}, {PID: 700, PPID: 200, PGID: 700, Start: 10}})
	// ...so it is found after its parent died and it was re-parented, with
	// its children; 700's pid now belongs to a newer process.
	later := table()
	for i := range later {
		if later[i].PID == 700 {
			later[i].Start = 99
		}
	}
	got := pids(tr.members(later))
	want := []int{200, 201, 202, 400, 600, 601, 900, 901, 902}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("members after re-parenting = %v, want %v", got, want)
	}
	for _, bad := range []int{1, 100, 300, 301, 500, 700, 800} {
		for _, p := range got {
			if p == bad {
				t.Errorf("process %d is not the run's", bad)
			}
		}
	}
}
