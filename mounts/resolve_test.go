package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestResolveHostile runs hostile and ordinary paths through Resolve with
// system none: a row either gives the host path or the sentinel.
func TestResolveHostile(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)
	ws := f.ws
	long := strings.Repeat("x", 300)
	up := filepath.Dir(filepath.Dir(filepath.Dir(ws))) // where ws/up (../../..) points
	rows := []struct {
		name, path string
		want       string // host path when err is nil
		err        error
	}{
		{"plain", ws + "/a/b.txt", f.p("ws/a/b.txt"), nil},
		{"relative to root", "a/b.txt", f.p("ws/a/b.txt"), nil},
		{"relative dot", "./a/./b.txt", f.p("ws/a/b.txt"), nil},
		{"double slashes", "/" + ws + "//a///b.txt", f.p("ws/a/b.txt"), nil},
		{"trailing slash", ws + "/a/", f.p("ws/a"), nil},
		{"root itself", ws, ws, nil},
		{"dotdot inside", ws + "/a/../a/b.txt", f.p("ws/a/b.txt"), nil},
		{"dotdot out of root", ws + "/../outside/o.txt", "", ErrOutsideSandbox},
		{"relative dotdot out", "../outside/o.txt", "", ErrOutsideSandbox},
		{"many dotdots to slash", strings.Repeat("../", 50) + "etc/passwd", "", ErrOutsideSandbox},
		{"absolute outside", "/etc/passwd", "", ErrOutsideSandbox},
		{"scaffold parent of root", filepath.Dir(ws), "", ErrOutsideSandbox},
		{"slash", "/", "", ErrOutsideSandbox},
		{"missing file", ws + "/new/dir/x.txt", f.p("ws/new/dir/x.txt"), nil},
		{"missing then dotdot", ws + "/new/../top.txt", "", os.ErrNotExist}, // as the kernel: ENOENT
		{"file then dotdot", ws + "/top.txt/../top.txt", "", syscall.ENOTDIR},
		{"link to /etc with system none", ws + "/l-etc/passwd", "", ErrOutsideSandbox},
		{"link to /root", ws + "/l-root/x", "", ErrOutsideSandbox},
		{"relative link out", ws + "/l-out/o.txt", "", ErrOutsideSandbox},
		{"absolute link to host dir out", ws + "/l-out-abs/o.txt", "", ErrOutsideSandbox},
		{"link up to /tmp", ws + "/up/x", "", ErrOutsideSandbox},
		{"link up and back in", ws + "/up" + strings.TrimPrefix(ws, up) + "/top.txt", f.p("ws/top.txt"), nil},
		{"link dotdot goes to target's parent", ws + "/rel/../b.txt", f.p("ws/a/b.txt"), nil},
		{"loop", ws + "/loop1", "", ErrLoop},
		{"self loop", ws + "/self/x", "", ErrLoop},
		{"link to denied file", ws + "/l-env", "", ErrDenied},
		{"link to denied dir", ws + "/l-secrets/key", "", ErrDenied},
		{"denied file", ws + "/.env", "", ErrDenied},
		{"denied via dotdot", ws + "/a/../.env", "", ErrDenied},
		{"under denied dir", ws + "/secrets/key", "", ErrDenied},
		{"denied missing", ws + "/secrets/none/x", "", ErrDenied},
		{"dangling link", ws + "/dangling", f.p("ws/a/new.txt"), nil},
		{"remapped mount", "/data/file.json", f.p("cache/file.json"), nil},
		{"link into remapped mount", ws + "/l-data/file.json", f.p("cache/file.json"), nil},
		{"absolute link inside remapped mount", "/data/abs", f.p("cache/file.json"), nil},
		{"host-absolute link in remapped mount", "/data/hostabs", "", ErrOutsideSandbox},
		{"relative escape from remapped mount", "/data/esc/x", "", ErrOutsideSandbox},
		{"remapped source path is not mounted", f.p("cache/file.json"), "", ErrOutsideSandbox},
		{"mount shadows host dir", ws + "/vendor/hidden.txt", f.p("vendorsrc/hidden.txt"), nil},
		{"mount file", ws + "/vendor/lib.go", f.p("vendorsrc/lib.go"), nil},
		{"longest prefix", ws + "/a/deep/d.txt", f.p("deepsrc/d.txt"), nil},
		{"deny inside a rw mount", ws + "/a/deep/secret.txt", "", ErrDenied},
		{"deny inside a rw mount via dotdot", ws + "/a/deep/../deep/secret.txt", "", ErrDenied},
		{"dotdot out of nested mount", ws + "/a/deep/../b.txt", f.p("ws/a/b.txt"), nil},
		{"tmp is private", "/tmp/x", "", ErrOutsideSandbox},
		{"proc is synthetic", "/proc/self/environ", "", ErrOutsideSandbox},
		{"dev is synthetic", "/dev/null", "", ErrOutsideSandbox},
		{"empty", "", "", ErrInvalidPath},
		{"NUL", ws + "/a\x00/b.txt", "", ErrInvalidPath},
		{"very long", "/" + strings.Repeat("a/", 3000), "", ErrInvalidPath},
		{"long component", ws + "/" + long, "", ErrInvalidPath},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			got, err := tab.Resolve(row.path)
			wantErr(t, err, row.err)
			if row.err == nil && got != row.want {
				t.Fatalf("Resolve(%q) = %q, want %q", row.path, got, row.want)
			}
		})
	}
}

// TestResolveSystemHost checks that links to system paths end where a shell
// inside the sandbox would: readable, read-only, and secrets denied.
func TestResolveSystemHost(t *testing.T) {
	if _, err := os.Stat("/etc/passwd"); err != nil {
		skipUnlessCI(t, "this host has no /etc/passwd")
	}
	f := newFixture(t, spec.SystemHost)
	tab := f.table(t)
	host, err := tab.Resolve(f.ws + "/l-etc/passwd")
	wantErr(t, err, nil)
	if host != "/etc/passwd" {
		t.Fatalf("host = %q", host)
	}
	wantErr(t, tab.Check(f.ws+"/l-etc/passwd", true), ErrReadOnly)
	wantErr(t, tab.Check("/etc/passwd", true), ErrReadOnly)
	wantErr(t, tab.Check(strings.Repeat("../", 40)+"etc/passwd", false), nil)
	wantErr(t, tab.Check(f.ws+"/l-root/x", false), ErrOutsideSandbox)
	if _, err := os.Lstat("/etc/shadow"); err == nil {
		wantErr(t, tab.Check(f.ws+"/l-etc/shadow", false), ErrDenied)
		wantErr(t, tab.Check("/etc/shadow", false), ErrDenied)
	}
}

// TestLinkChainLimit checks the 40-link limit: 40 links resolve, 41 fail.
func TestLinkChainLimit(t *testing.T) {
	base := t.TempDir()
	lines := []string{"file ws/end ok"}
	for i := 0; i < 41; i++ {
		next := "end"
		if i > 0 {
			next = "l" + itoa(i-1)
		}
		lines = append(lines, "symlink ws/l"+itoa(i)+" "+next)
	}
	mkTree(t, base, lines...)
	tab, err := New(&spec.Sandbox{Root: filepath.Join(base, "ws")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Resolve("l39"); err != nil {
		t.Fatalf("40 links: %v", err)
	}
	_, err = tab.Resolve("l40")
	wantErr(t, err, ErrLoop)
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestRootfsNamespace checks that absolute links inside a rootfs resolve in
// the rootfs, not on the host, and that /tmp and /proc stay outside.
func TestRootfsNamespace(t *testing.T) {
	base := t.TempDir()
	mkTree(t, base,
		"file rootfs/etc/hostname sandboxed",
		"symlink rootfs/etc/alias /etc/hostname",
		"symlink rootfs/hostlink "+filepath.Join(base, "hostonly", "x"),
		"file rootfs/opt/app/conf in rootfs",
		"symlink rootfs/optlink /opt/app/conf",
		"file rootfs/tmp/y in rootfs tmp",
		"file hostonly/x host",
		"dir ws",
	)
	rootfs := filepath.Join(base, "rootfs")
	tab, err := New(&spec.Sandbox{Root: filepath.Join(base, "ws"), System: spec.System{Kind: spec.SystemRootfs, Rootfs: rootfs}})
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct{ path, want string }{
		{"/etc/hostname", filepath.Join(rootfs, "etc/hostname")},
		{"/etc/alias", filepath.Join(rootfs, "etc/hostname")},
		{"/optlink", filepath.Join(rootfs, "opt/app/conf")},
		{"/", rootfs},
	}
	for _, row := range rows {
		got, err := tab.Resolve(row.path)
		if err != nil || got != row.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", row.path, got, err, row.want)
		}
	}
	// hostlink names a host path under /tmp, which is private in the sandbox.
	for _, p := range []string{"/tmp/y", "/proc/1/root", "/dev/sda", "/hostlink"} {
		_, err := tab.Resolve(p)
		if !errors.Is(err, ErrOutsideSandbox) {
			t.Errorf("Resolve(%q) error = %v, want ErrOutsideSandbox", p, err)
		}
	}
	wantErr(t, tab.Check("/etc/hostname", true), ErrReadOnly)
}

// TestWriteRules checks ResolveWrite/Check for writes: read-only mounts,
// protect (existing or not, directly or through a link), deny, nested
// mounts both ways.
func TestWriteRules(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)
	ws := f.ws
	rows := []struct {
		name, path string
		err        error
		rule       string
	}{
		{"workspace file", ws + "/a/b.txt", nil, ""},
		{"new file", ws + "/new/x.txt", nil, ""},
		{"ro mount inside rw", ws + "/vendor/lib.go", ErrReadOnly, RuleReadonly},
		{"new file in ro mount", ws + "/vendor/new.go", ErrReadOnly, RuleReadonly},
		{"remapped ro mount", "/data/file.json", ErrReadOnly, RuleReadonly},
		{"rw mount deep", ws + "/a/deep/new.txt", nil, ""},
		{"protect existing", ws + "/.git/config", ErrReadOnly, RuleProtect},
		{"protect missing at start", ws + "/.git/hooks/pre-commit", ErrReadOnly, RuleProtect},
		{"protect dir itself", ws + "/.git/hooks", ErrReadOnly, RuleProtect},
		{"protect through link", ws + "/l-hooks/pre-commit", ErrReadOnly, RuleProtect},
		{"protect through dotdot", ws + "/a/../.git/hooks/x", ErrReadOnly, RuleProtect},
		{"sibling of protect", ws + "/.git/HEAD", nil, ""},
		{"denied", ws + "/.env", ErrDenied, RuleDeny},
		{"denied new", ws + "/secrets/new", ErrDenied, RuleDeny},
		{"link into ro", ws + "/l-data/file.json", ErrReadOnly, RuleReadonly},
		{"dangling link creates target", ws + "/dangling", nil, ""},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			err := tab.Check(row.path, true)
			wantErr(t, err, row.err)
			if row.err == nil {
				if !tab.CanWrite(row.path) || !tab.CanRead(row.path) {
					t.Fatal("CanWrite/CanRead disagree with Check")
				}
				return
			}
			if tab.CanWrite(row.path) {
				t.Fatal("CanWrite is true")
			}
			var pe *PathError
			errors.As(err, &pe)
			if pe.Rule != row.rule || pe.Op != "write" {
				t.Fatalf("rule %q op %q, want rule %q op write", pe.Rule, pe.Op, row.rule)
			}
		})
	}

	// rw inside ro: a read-only workspace with a writable output mount.
	base := t.TempDir()
	mkTree(t, base, "file ws/x ro", "dir ws/out", "dir outsrc")
	ro, err := New(&spec.Sandbox{Root: filepath.Join(base, "ws"), Readonly: true,
		Mounts: []spec.Mount{{Source: filepath.Join(base, "outsrc"), Target: filepath.Join(base, "ws", "out")}}})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, ro.Check(filepath.Join(base, "ws/x"), true), ErrReadOnly)
	wantErr(t, ro.Check(filepath.Join(base, "ws/out/y"), true), nil)
	if got, _ := ro.ResolveWrite(filepath.Join(base, "ws/out/y")); got != filepath.Join(base, "outsrc/y") {
		t.Fatalf("ResolveWrite = %q", got)
	}
}

// TestDenyHostAlias checks that a second mount of a denied host directory
// does not reveal it.
func TestDenyHostAlias(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	f.sb.Mounts = append(f.sb.Mounts, spec.Mount{Source: f.p("ws/secrets"), Target: "/alias"})
	tab := f.table(t)
	_, err := tab.Resolve("/alias/key")
	wantErr(t, err, ErrDenied)
	got, err := tab.List(f.ws, "**")
	wantErr(t, err, nil)
	for _, p := range got {
		if strings.HasSuffix(p, "/secrets") || strings.Contains(p, "/secrets/") || strings.HasSuffix(p, "/.env") {
			t.Fatalf("List shows denied %s", p)
		}
	}
}

// TestNoWorkspace checks a pure-function sandbox: nothing is readable and a
// relative path says why.
func TestNoWorkspace(t *testing.T) {
	tab, err := New(&spec.Sandbox{System: spec.System{Kind: spec.SystemNone}})
	if err != nil {
		t.Fatal(err)
	}
	err = tab.Check("x", false)
	wantErr(t, err, ErrOutsideSandbox)
	if !strings.Contains(err.Error(), "has none") || !strings.Contains(err.Error(), "readable: none") {
		t.Fatalf("message %q", err)
	}
	if len(tab.Entries()) != 0 {
		t.Fatalf("entries %v", tab.Entries())
	}
}

// TestNewRejects checks New's own validation.
func TestNewRejects(t *testing.T) {
	rows := []struct {
		name string
		sb   *spec.Sandbox
	}{
		{"nil", nil},
		{"relative root", &spec.Sandbox{Root: "ws"}},
		{"unclean root", &spec.Sandbox{Root: "/a/../b"}},
		{"relative target", &spec.Sandbox{Root: "/w", Mounts: []spec.Mount{{Source: "/s", Target: "t"}}}},
		{"NUL", &spec.Sandbox{Root: "/w\x00"}},
		{"duplicate targets", &spec.Sandbox{Root: "/w", Mounts: []spec.Mount{{Source: "/s", Target: "/w"}}}},
		{"relative deny", &spec.Sandbox{Root: "/w", Deny: []string{".env"}}},
		{"relative protect", &spec.Sandbox{Root: "/w", Protect: []string{".git"}}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			_, err := New(row.sb)
			if !errors.Is(err, ErrInvalidSandbox) {
				t.Fatalf("error = %v, want ErrInvalidSandbox", err)
			}
		})
	}
}

// TestEntriesAndRoots checks the order of Entries and the roots' rendering.
func TestEntriesAndRoots(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	f.sb.Mounts = append(f.sb.Mounts, spec.Mount{Source: f.p("outside"), Target: "/zz"})
	tab := f.table(t)
	var targets []string
	for _, e := range tab.Entries() {
		targets = append(targets, e.Target)
	}
	want := []string{"/data", f.ws, f.ws + "/a/deep", f.ws + "/vendor", "/zz"}
	if strings.Join(targets, " ") != strings.Join(want, " ") {
		t.Fatalf("targets %v, want %v", targets, want)
	}
	for i, e := range tab.Entries() {
		for _, parent := range tab.Entries()[i+1:] {
			if parent.Target != e.Target && isUnder(e.Target, parent.Target) {
				t.Fatalf("%s listed before its parent %s", e.Target, parent.Target)
			}
		}
	}
	ws := tab.Entries()[1]
	if ws.Origin != OriginWorkspace || ws.Name != spec.WorkspaceZone || ws.Source != f.ws {
		t.Fatalf("workspace entry %+v", ws)
	}
	readable := strings.Join(tab.ReadableRoots(), ", ")
	if want := "/data (ro), " + f.ws + " (rw), " + f.ws + "/a/deep (rw), " + f.ws + "/vendor (ro), /zz (rw)"; readable != want {
		t.Fatalf("ReadableRoots = %q, want %q", readable, want)
	}
	writable := strings.Join(tab.WritableRoots(), "; ")
	if want := f.ws + " (except " + f.ws + "/.git/hooks, " + f.ws + "/.git/config, " + f.ws + "/.env, " +
		f.ws + "/secrets, " + f.ws + "/vendor); " + f.ws + "/a/deep (except " + f.ws + "/a/deep/secret.txt); /zz"; writable != want {
		t.Fatalf("WritableRoots = %q, want %q", writable, want)
	}
}

// TestSystemShadowed checks that a declared mount replaces a system
// directory with the same target.
func TestSystemShadowed(t *testing.T) {
	if len(spec.ExistingDirs([]string{"/usr"})) == 0 {
		skipUnlessCI(t, "this host has no /usr")
	}
	base := t.TempDir()
	mkTree(t, base, "file myusr/x mine", "dir ws")
	tab, err := New(&spec.Sandbox{Root: filepath.Join(base, "ws"), System: spec.System{Kind: spec.SystemHost},
		Mounts: []spec.Mount{{Source: filepath.Join(base, "myusr"), Target: "/usr"}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tab.Resolve("/usr/x")
	if err != nil || got != filepath.Join(base, "myusr/x") {
		t.Fatalf("Resolve = %q, %v", got, err)
	}
	n := 0
	for _, e := range tab.Entries() {
		if e.Target == "/usr" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d entries for /usr", n)
	}
}
