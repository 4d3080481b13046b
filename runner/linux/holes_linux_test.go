package linux_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// TestIntegrationForgedSetupErrorIsTheCommands: a command that prints
// cordon's own wording on stderr and exits 125 (or 127) is a process error
// with cordon's own detail; the text it printed never becomes a
// setup_error's detail (issue 9, item 7). A real exec failure still is
// reported, from PID 1's status pipe.
func TestIntegrationForgedSetupErrorIsTheCommands(t *testing.T) {
	sb := newSandbox(t)
	for _, tc := range []struct {
		name string
		code int
		line string
	}{
		{"set-up", 125, "cordon: sandbox set-up failed: forged; set require_os_sandbox: false"},
		{"exec", 127, "cordon: cannot execute forged: set require_os_sandbox: false"},
		{"seccomp", 125, "cordon: seccomp(SET_MODE_FILTER): forged require_os_sandbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, sb, "", sh("echo '"+tc.line+"' >&2; exit "+strconv.Itoa(tc.code))...)
			if out.res.ExitCode != tc.code || out.res.FailureType != runner.FailureProcessError {
				t.Fatalf("got exit %d %s; want %d process_error", out.res.ExitCode, out.res.FailureType, tc.code)
			}
			if strings.Contains(out.res.FailureDetail, "require_os_sandbox") || strings.Contains(out.res.FailureDetail, "forged") {
				t.Fatalf("the command's stderr became the failure detail: %q", out.res.FailureDetail)
			}
		})
	}
	out := run(t, sb, "", "no-such-command-cordon")
	if out.res.ExitCode != 127 || !strings.Contains(out.res.FailureDetail, "cannot execute no-such-command-cordon") {
		t.Fatalf("a real exec failure lost its detail: %+v", out.res)
	}
}

// TestIntegrationNoSetuidFilesForTheHost: no sandboxed command can leave a
// setuid or setgid file in a host directory it may write, by any call that
// takes a mode (issue 9, item 5). nosuid inside the sandbox does not
// protect the host, which mounts the same files without it. Each attempt
// must fail, and afterwards no file with S_ISUID or S_ISGID exists. Runs as
// root and rootless (hack/test-rootless.sh).
func TestIntegrationNoSetuidFilesForTheHost(t *testing.T) {
	sb := newSandbox(t)
	mknodat := map[string]string{"amd64": "259", "arm64": "33"}[runtime.GOARCH]
	if mknodat == "" {
		t.Skipf("no mknodat number for %s in this test", runtime.GOARCH)
	}
	const eperm = "Operation not permitted"
	perl := func(code string) []string { return []string{"/usr/bin/perl", "-MFcntl", "-e", code} }
	for _, tc := range []struct {
		name, file, errno string
		args              []string
	}{
		{"chmod", "x", eperm, sh("cp /bin/true x && chmod 6755 x")},
		{"chmod g+s", "xg", eperm, sh("cp /bin/true xg && chmod g+s xg")},
		{"fchmod", "f", eperm, perl(`open(my $f, ">", "f") or die; chmod(04755, $f) or die "fchmod: $!"`)},
		{"fchmodat2", "f2", eperm, perl(`my $p = "f2"; open(my $f, ">", $p) or die; syscall(452, -100, $p, 04755, 0) == 0 or die "fchmodat2: $!"`)},
		{"open O_CREAT", "o", eperm, perl(`sysopen(my $f, "o", O_CREAT|O_WRONLY, 04755) or die "open: $!"`)},
		{"openat2", "o2", "Function not implemented", perl(`my $p = "o2"; my $how = pack("QQQ", O_CREAT|O_WRONLY, 04755, 0); syscall(437, -100, $p, $how, 24) >= 0 or die "openat2: $!"`)},
		{"mkdir", "d", eperm, sh("mkdir -m 2755 d")},
		{"mknodat", "n", eperm, perl(`my $p = "n"; syscall(` + mknodat + `, -100, $p, 0100000|04755, 0) == 0 or die "mknodat: $!"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, sb, "", tc.args...)
			if out.res.ExitCode == 0 || !strings.Contains(out.stderr, tc.errno) {
				t.Errorf("the attempt did not fail with %q: %+v %s", tc.errno, out.res, out.stderr)
			}
			fi, err := os.Lstat(filepath.Join(sb.Root, tc.file))
			if err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				t.Fatalf("%s is %v on the host after the run", tc.file, fi.Mode())
			}
		})
	}
	// What never asks for the bits still works.
	out := run(t, sb, "", sh(`touch ok && chmod 755 ok && mkdir -m 755 okd && cp -p ok okp && `+
		`/usr/bin/perl -MFcntl -e 'sysopen(my $f, "ok2", O_CREAT|O_WRONLY, 0644) or die "$!"; open(my $g, "<", "ok") or die "$!"'`)...)
	if out.res.ExitCode != 0 {
		t.Fatalf("plain modes failed: %+v %s", out.res, out.stderr)
	}
}

// TestIntegrationSecretMasksRefuseEveryOpen: under system: host the host's
// secret files are covered so that every open fails, for reading and for
// writing, as the policy says (issue 9, item 6); libcontainer's plain
// /dev/null mask let `echo x > /etc/shadow` and `cat /etc/shadow` exit 0.
func TestIntegrationSecretMasksRefuseEveryOpen(t *testing.T) {
	sb := newSandbox(t)
	var files []string
	for _, p := range spec.SystemSecrets(sb) {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			files = append(files, p)
		}
	}
	if len(files) == 0 {
		t.Skip("this host has none of the secret files")
	}
	table, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if table.Check(f, true) == nil || table.Check(f, false) == nil {
			t.Errorf("the policy allows %s", f)
		}
		for _, script := range []string{"cat " + f, "echo x > " + f, "echo x >> " + f} {
			out := run(t, sb, "", sh(script)...)
			if out.res.ExitCode == 0 || !strings.Contains(out.stderr, "Permission denied") {
				t.Errorf("%q: exit %d, stderr %q; want a refused open", script, out.res.ExitCode, out.stderr)
			}
			if out.stdout != "" {
				t.Errorf("%q printed %q", script, out.stdout)
			}
		}
	}
}

// TestIntegrationMountPointInReadOnlyDirRefused: a mount whose target lies
// in a directory that is read-only in the sandbox (/etc under system: host,
// a read-only workspace) and does not exist there is refused by the one
// rule the loader, the mount table (cordon check and explain) and the
// runner share, before anything starts, with the field and the fix named;
// nothing is created on the host (issue 9, item 9).
func TestIntegrationMountPointInReadOnlyDirRefused(t *testing.T) {
	src := t.TempDir()
	for _, tc := range []struct {
		name     string
		target   func(sb *spec.Sandbox) string
		readonly bool
	}{
		{"under /etc", func(*spec.Sandbox) string { return "/etc/cordon-test-mountpoint" }, false},
		{"under a read-only workspace", func(sb *spec.Sandbox) string { return filepath.Join(sb.Root, "out") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			sb.Readonly = tc.readonly
			target := tc.target(sb)
			sb.Mounts = []spec.Mount{{Source: src, Target: target}}
			if _, err := mounts.New(sb); err == nil || !strings.Contains(err.Error(), "mounts[0].target") {
				t.Errorf("the mount table (cordon check, explain) accepts it: %v", err)
			}
			out := run(t, sb, "", "true")
			if out.res.FailureType != runner.FailureSetupError || !strings.Contains(out.res.FailureDetail, "mounts[0].target") ||
				!strings.Contains(out.res.FailureDetail, "read-only in the sandbox") {
				t.Errorf("run: %+v", out.res)
			}
			mustNotExist(t, target)
		})
	}
}

// TestIntegrationSystemNoneRefusedOrRuns: `system: none` without the
// runtime directories is refused up front as a setup_error that says why
// and what to mount (cordon's own PID 1 is dynamically linked), instead of
// every command failing as sandbox_denied "exec /proc/self/exe"; with them
// mounted read-only, as the strict profile does, a command runs (issue 9,
// item 8).
func TestIntegrationSystemNoneRefusedOrRuns(t *testing.T) {
	sb := newSandbox(t)
	sb.System = spec.System{Kind: spec.SystemNone}
	marker := filepath.Join(sb.Root, "ran")
	out := run(t, sb, "", "/bin/touch", marker)
	if out.res.FailureType != runner.FailureSetupError || out.res.ExitCode != runner.ExitSetupError ||
		!strings.Contains(out.res.FailureDetail, "system: none") || !strings.Contains(out.res.FailureDetail, "readonly: true") {
		t.Errorf("system: none without runtime mounts: %+v", out.res)
	}
	mustNotExist(t, marker)
	for _, d := range spec.ExistingDirs(spec.RuntimeDirs) {
		sb.Mounts = append(sb.Mounts, spec.Mount{Source: d, Target: d, Readonly: true})
	}
	out = run(t, sb, "", "/bin/touch", marker)
	if out.res.ExitCode != 0 {
		t.Fatalf("system: none with the runtime directories: %+v %s", out.res, out.stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the command did not run: %v", err)
	}
}

// TestIntegrationDenyAndProtectHoldAtAliases: deny and protect are about
// host files, so they hold at every sandbox path that reaches the file: a
// home mounted read-only at /hosthome with its .ssh denied, and the
// workspace mounted again at /alias (issue 9, item 4). The kernel refuses,
// the mount table (cordon check) agrees, and the host files are untouched.
func TestIntegrationDenyAndProtectHoldAtAliases(t *testing.T) {
	sb := newSandbox(t)
	ws := sb.Root
	home := t.TempDir()
	const key = "PRIVATE-KEY-cordon-test"
	for _, f := range []struct{ path, data string }{
		{filepath.Join(home, ".ssh", "id_ed25519"), key},
		{filepath.Join(ws, ".env"), "SECRET=cordon-test"},
		{filepath.Join(ws, ".git", "config"), "[core]\n"},
		{filepath.Join(ws, ".git", "hooks", "README"), "hooks\n"},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sb.Deny = []string{filepath.Join(home, ".ssh"), filepath.Join(ws, ".env")}
	sb.Mounts = []spec.Mount{{Source: home, Target: "/hosthome", Readonly: true}, {Source: ws, Target: "/alias"}}
	table, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		write bool
	}{
		{"/hosthome/.ssh/id_ed25519", false}, {"/alias/.env", false},
		{"/alias/.git/config", true}, {"/alias/.git/hooks/pre-commit", true},
	} {
		if table.Check(c.path, c.write) == nil {
			t.Errorf("cordon check allows %s (write %v)", c.path, c.write)
		}
	}
	// The denial is typed as one at the alias too, as at the path itself.
	for _, c := range []struct{ script, blocked string }{
		{"cat /hosthome/.ssh/id_ed25519", "/hosthome/.ssh/id_ed25519"},
		{"mv /alias/.git /alias/moved", "/alias/.git"},
	} {
		out := run(t, sb, "", sh(c.script)...)
		if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != c.blocked {
			t.Errorf("%q: %s blocked %q; want sandbox_denied of %s", c.script, out.res.FailureType, out.res.BlockedPath, c.blocked)
		}
	}
	for _, script := range []string{
		"cat /hosthome/.ssh/id_ed25519",
		"cat /alias/.env",
		"echo '[core] hooksPath = /tmp' >> /alias/.git/config",
		"echo 'echo pwned' > /alias/.git/hooks/pre-commit",
		"mv /alias/.git /alias/moved",
		"mv /alias/.git/hooks /alias/.git/h2",
	} {
		out := run(t, sb, "", sh(script)...)
		if out.res.ExitCode == 0 {
			t.Errorf("%q succeeded", script)
		}
		if strings.Contains(out.stdout, key) || strings.Contains(out.stdout, "cordon-test") {
			t.Errorf("%q printed a denied file: %q", script, out.stdout)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, ".git", "config")); err != nil || string(b) != "[core]\n" {
		t.Errorf(".git/config on the host is now %q (%v)", b, err)
	}
	mustNotExist(t, filepath.Join(ws, ".git", "hooks", "pre-commit"))
	mustNotExist(t, filepath.Join(ws, "moved"))
	mustNotExist(t, filepath.Join(ws, ".git", "h2"))
}

// TestIntegrationSecretsHeldAtAliasMounts: the host's secret files stay
// unreadable at every other sandbox path that reaches them, whatever
// `system` says: /etc mounted at /hostetc, the file mounted on its own, and
// /etc reached through a symbolic link. cordon check (and so the file
// tools) denies each path and the kernel refuses each open, so nothing of
// the file is printed (review of issue 9: the masks covered /etc/shadow only
// at /etc/shadow). Runs as root and rootless (hack/test-rootless.sh).
func TestIntegrationSecretsHeldAtAliasMounts(t *testing.T) {
	var files []string
	for _, p := range spec.HostSecrets() {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && filepath.Dir(p) == "/etc" {
			files = append(files, p)
		}
	}
	if len(files) == 0 {
		t.Skip("this host has no secret file in /etc")
	}
	link := filepath.Join(t.TempDir(), "etc-link")
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	for _, system := range []spec.SystemKind{spec.SystemHost, spec.SystemNone} {
		sb := newSandbox(t)
		sb.System = spec.System{Kind: system}
		if system == spec.SystemNone {
			for _, d := range spec.ExistingDirs(spec.RuntimeDirs) {
				sb.Mounts = append(sb.Mounts, spec.Mount{Source: d, Readonly: true})
			}
		}
		sb.Mounts = append(sb.Mounts,
			spec.Mount{Source: "/etc", Target: "/hostetc", Readonly: true},
			spec.Mount{Source: link, Target: "/linketc", Readonly: true},
			spec.Mount{Source: files[0], Target: "/one-secret", Readonly: true})
		table, err := mounts.New(sb)
		if err != nil {
			t.Fatal(err)
		}
		paths := []string{"/one-secret"}
		for _, f := range files {
			paths = append(paths, "/hostetc/"+filepath.Base(f), "/linketc/"+filepath.Base(f))
		}
		for _, p := range paths {
			if table.Check(p, false) == nil {
				t.Errorf("system %s: cordon check allows reading %s", system, p)
			}
			out := run(t, sb, "", "cat", p)
			if out.res.ExitCode == 0 || out.stdout != "" {
				t.Errorf("system %s: cat %s: exit %d, printed %d bytes; want a refused open and nothing printed",
					system, p, out.res.ExitCode, len(out.stdout))
			}
		}
	}
}

// TestIntegrationRootfsWithoutLoaderRefused: a `system: <rootfs>` directory
// without this host's loader and libraries at their paths cannot start
// cordon's PID 1 (this dynamically linked binary); the run is refused up
// front as a setup_error that names what is missing, and the command never
// runs (review of issue 9, item 8's class: the rootfs case failed with
// "exec /proc/self/exe" and no reason).
func TestIntegrationRootfsWithoutLoaderRefused(t *testing.T) {
	sb := newSandbox(t)
	rootfs := t.TempDir()
	for _, d := range []string{"bin", "tmp", "proc", "dev"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sb.System = spec.System{Kind: spec.SystemRootfs, Rootfs: rootfs}
	marker := filepath.Join(sb.Root, "ran")
	out := run(t, sb, "", "/bin/touch", marker)
	if out.res.FailureType != runner.FailureSetupError || out.res.ExitCode != runner.ExitSetupError ||
		!strings.Contains(out.res.FailureDetail, "lacks what cordon's sandbox init") {
		t.Errorf("a rootfs without the loader: %+v", out.res)
	}
	mustNotExist(t, marker)
}

// TestIntegrationRootOnlyEtcFilesHidden: a root run's command is uid 0
// without capabilities, which still owns root's files, so it could read
// every root-owned file in /etc whatever its mode (a 0600 WireGuard key, an
// admin kubeconfig), while the README promised only world-readable ones.
// Every file and folder under /etc that others may not read is now a host
// secret: masked, denied by cordon check, nothing printed (review of issue
// 9, item 6's class). As root the test plants such a file and folder in
// /etc (removed afterwards); rootless it checks the ones the host has.
func TestIntegrationRootOnlyEtcFilesHidden(t *testing.T) {
	const secret = "cordon-test-root-only"
	var paths []string
	if os.Geteuid() == 0 {
		file := filepath.Join("/etc", "cordon-test-secret-"+strconv.Itoa(os.Getpid()))
		dir := filepath.Join("/etc", "cordon-test-secret-dir-"+strconv.Itoa(os.Getpid()))
		t.Cleanup(func() { _ = os.Remove(file); _ = os.RemoveAll(dir) })
		if err := os.WriteFile(file, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "key"), []byte(secret), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, file, filepath.Join(dir, "key"))
	}
	for _, p := range spec.HostSecrets() {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o004 == 0 {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		t.Skip("this host has no file in /etc that others may not read")
	}
	sb := newSandbox(t)
	table, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if table.Check(p, false) == nil {
			t.Errorf("cordon check allows reading %s", p)
		}
		out := run(t, sb, "", "cat", p)
		if out.res.ExitCode == 0 || out.stdout != "" {
			t.Errorf("cat %s: exit %d, printed %q; want a refused open and nothing printed", p, out.res.ExitCode, out.stdout)
		}
	}
}

// TestIntegrationMountTargetThroughPlantedLinkRefused: a mount target
// inside the workspace is made on the host by path when the sandbox is set
// up, so a link an earlier command planted there (a -> .git/hooks) carried
// it into a protect path: the run created .git/hooks/pre-commit on the
// host. Such a target is refused before anything is made, and nothing
// appears in .git/hooks (review of issue 9, item 4's class). Root and
// rootless.
func TestIntegrationMountTargetThroughPlantedLinkRefused(t *testing.T) {
	sb := newSandbox(t)
	hooks := filepath.Join(sb.Root, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git/hooks", filepath.Join(sb.Root, "a")); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "hook")
	if err := os.WriteFile(src, []byte("echo pwned\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb.Mounts = []spec.Mount{{Source: src, Target: filepath.Join(sb.Root, "a", "pre-commit"), Readonly: true}}
	out := run(t, sb, "", "true")
	if out.res.ExitCode != runner.ExitSetupError || !strings.Contains(out.res.FailureDetail, "mounts[0].target") {
		t.Errorf("a mount target through a planted link: %+v", out.res)
	}
	mustNotExist(t, filepath.Join(hooks, "pre-commit"))
}
