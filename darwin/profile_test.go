package darwin

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

var update = flag.Bool("update", false, "rewrite the golden profiles in testdata/golden/darwin")

const goldenDir = "../testdata/golden/darwin"

// fakeCanon is a fixed canonicalizer so that goldens do not depend on the
// host: macOS's /tmp, /var and /etc links, plus one user symbolic link,
// /Users/dev/link -> /Users/dev/proj.
func fakeCanon(p string) string {
	p = privateForm(p)
	if rest, ok := cut(p, "/Users/dev/link"); ok {
		return "/Users/dev/proj" + rest
	}
	return p
}

func protectAll(root string, rel []string) []string {
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(root, r)
	}
	return out
}

// workspaceSandbox is what the workspace profile gives on a Mac for
// /Users/dev/proj.
func workspaceSandbox() *spec.Sandbox {
	root := "/Users/dev/proj"
	return &spec.Sandbox{
		Root:             root,
		Protect:          protectAll(root, spec.DefaultProtect),
		System:           spec.System{Kind: spec.SystemHost},
		Env:              spec.Env{Pass: []string{"PATH", "LANG", "TERM"}},
		RequireOSSandbox: true,
	}
}

// goldenSandboxes are the sandboxes with checked-in profiles.
func goldenSandboxes() map[string]*spec.Sandbox {
	ro := workspaceSandbox()
	ro.Readonly = true

	strict := workspaceSandbox()
	strict.System = spec.System{Kind: spec.SystemNone}
	strict.Limits.Timeout = 30 * time.Second
	for _, d := range []string{"/usr", "/bin", "/sbin"} {
		strict.Mounts = append(strict.Mounts, spec.Mount{Source: d, Target: d, Readonly: true})
	}

	// A reviewer worker derived from the workspace: restricted to src,
	// read-only, with the pip cache zone, deny and protect inherited.
	worker := workspaceSandbox()
	worker.Root = "/Users/dev/proj/src"
	worker.Readonly = true
	worker.Deny = []string{"/Users/dev/proj/.env"}
	worker.Mounts = []spec.Mount{{Source: "/Users/dev/.cache/pip", Target: "/Users/dev/.cache/pip", Readonly: true, Name: "cache"}}
	worker.Limits.Timeout = 10 * time.Second
	worker.Lineage = []string{"reviewer", "linter"}

	denyProtect := workspaceSandbox()
	denyProtect.Deny = []string{"/Users/dev/proj/.env", "/Users/dev/proj/secrets", "/Users/dev/link/config/credentials.json"}
	denyProtect.Protect = []string{"/Users/dev/proj/.git/hooks", "/Users/dev/proj/.git/config", "/Users/dev/proj/ci/deploy.sh"}
	denyProtect.Mounts = []spec.Mount{
		{Source: "/Users/dev/proj/vendor", Target: "/Users/dev/proj/vendor", Readonly: true},
		{Source: "/Users/dev/proj/vendor/patched", Target: "/Users/dev/proj/vendor/patched"},
		{Source: "/Users/dev/data", Target: "/Users/dev/data"},
		{Source: "/tmp/cache", Target: "/tmp/cache", Readonly: true},
	}

	on := workspaceSandbox()
	on.Network = spec.Network{Enabled: true}

	off := &spec.Sandbox{Root: "/Users/dev/proj", System: spec.System{Kind: spec.SystemHost}, RequireOSSandbox: true}

	allow := workspaceSandbox()
	allow.Network = spec.Network{Enabled: true, Allow: []string{"github.com:443", "*.pypi.org", "[::1]:53"}}

	degraded := workspaceSandbox()
	degraded.RequireOSSandbox = false
	degraded.Network = spec.Network{Enabled: true, Allow: []string{"github.com:443"}}
	degraded.Limits = spec.Limits{Memory: 512 << 20, Pids: 256}

	return map[string]*spec.Sandbox{
		"workspace":     workspaceSandbox(),
		"readonly":      ro,
		"strict":        strict,
		"worker":        worker,
		"deny-protect":  denyProtect,
		"network-on":    on,
		"network-off":   off,
		"network-allow": allow,
		"degraded":      degraded,
		"pure-function": {System: spec.System{Kind: spec.SystemNone}, RequireOSSandbox: true, Lineage: []string{"fmt"}},
	}
}

// goldenProxyPort is the proxy port of the network-allow golden.
const goldenProxyPort = 49152

// goldenProxyConnect is the cordon executable of the network-allow golden.
const goldenProxyConnect = "/Users/dev/go/bin/cordon"

func TestGoldenProfiles(t *testing.T) {
	for name, sb := range goldenSandboxes() {
		t.Run(name, func(t *testing.T) {
			opts := ProfileOptions{Canon: fakeCanon}
			if name == "network-allow" {
				opts.ProxyPort, opts.ProxyConnect = goldenProxyPort, goldenProxyConnect
			}
			got, err := Profile(sb, opts)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(goldenDir, name+".sb")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./darwin/ -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("profile differs from %s (go test ./darwin/ -update rewrites it); got:\n%s", path, got)
			}
		})
	}
}

func isFileRule(r sbRule) bool {
	for _, op := range r.ops {
		if strings.HasPrefix(op, "file-") {
			return true
		}
	}
	return false
}

// reopened returns the allow rules that come after a file deny they could
// reopen, and the number of file denies.
func reopened(p *sbProfile) (problems []string, denies int) {
	overlap := func(a, b sbRule) bool {
		for _, x := range a.ops {
			for _, y := range b.ops {
				if covers(x, y) || covers(y, x) {
					return true
				}
			}
		}
		return false
	}
	for i, d := range p.rules {
		if !isFileRule(d) || d.action != "deny" {
			continue
		}
		denies++
		for _, a := range p.rules[i+1:] {
			if a.action != "allow" || !overlap(a, d) {
				continue
			}
			// The only allow that may follow a deny it overlaps is that of
			// a read-write mount nested in a read-only one nested in a
			// writable one: it reopens the read-only mount's write deny
			// inside itself.
			if strings.Join(d.ops, " ") == "file-write*" && a.filter == "subpath" && d.re != nil && d.re.MatchString(a.arg) {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s can reopen the earlier %s", a.src, d.src))
		}
	}
	return problems, denies
}

func TestReopenedCatchesLateAllows(t *testing.T) {
	head := "(version 1)\n(deny default (with message \"cordon\"))\n"
	bad := head + "(deny file-read* (regex #\"^/a/s(/.*)?$\") (with message \"cordon\"))\n(allow file-read* (subpath \"/a\"))\n"
	if problems, _ := reopened(mustRead(t, bad, "cordon")); len(problems) != 1 {
		t.Errorf("a late allow went unnoticed: %v", problems)
	}
	good := head + "(allow file-read* (subpath \"/a\"))\n(deny file-read* (regex #\"^/a/s(/.*)?$\") (with message \"cordon\"))\n"
	if problems, _ := reopened(mustRead(t, good, "cordon")); len(problems) != 0 {
		t.Errorf("false alarm: %v", problems)
	}
}

// TestProfilesAreWellFormed reads back every golden sandbox's profile with
// the test's SBPL reader: balanced, only allowed operations, filters and
// modifiers, the tag on every deny rule, and no allow of a file operation
// after the first file deny (so no allow can reopen a deny).
func TestProfilesAreWellFormed(t *testing.T) {
	for name, sb := range goldenSandboxes() {
		for _, tag := range []string{"", "cordon-0123456789abcdef"} {
			t.Run(name+"/"+tag, func(t *testing.T) {
				src, err := Profile(sb, ProfileOptions{Canon: fakeCanon, Tag: tag})
				if err != nil {
					t.Fatal(err)
				}
				want := tag
				if want == "" {
					want = DefaultTag
				}
				p := mustRead(t, src, want)
				problems, denies := reopened(p)
				for _, pr := range problems {
					t.Error(pr)
				}
				if want := len(sb.Deny) + len(sb.Protect); denies < want {
					t.Errorf("%d file denies, want at least %d", denies, want)
				}
			})
		}
	}
}

func TestProfileNetwork(t *testing.T) {
	sbs := goldenSandboxes()
	tests := []struct {
		name    string
		open    bool
		unixOff bool
	}{
		{"network-on", true, true}, // IP only: no docker.sock or ssh-agent
		{"network-off", false, true},
		{"workspace", false, true},
		{"degraded", false, true},      // the allow list goes through the proxy: no endpoint but its port
		{"network-allow", false, true}, // idem
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := Profile(sbs[tt.name], ProfileOptions{Canon: fakeCanon})
			if err != nil {
				t.Fatal(err)
			}
			p := mustRead(t, src, DefaultTag)
			for _, op := range []string{"network-outbound", "network-bind", "network-inbound"} {
				if got := p.allows(t, op, ""); got != tt.open {
					t.Errorf("%s allowed = %v, want %v", op, got, tt.open)
				}
			}
			// A Unix socket connect is network-outbound on a path.
			if got := p.allows(t, "network-outbound", "/private/var/run/docker.sock"); got == tt.unixOff {
				t.Errorf("unix socket connect allowed = %v with network open = %v", got, tt.open)
			}
		})
	}
}

// TestProfileAllowListReachesOnlyTheProxy: with an allow list, the
// sandbox may open TCP connections to its run's proxy port on localhost
// and to nothing else: no other port (another local service), no other
// address, no listening, no Unix socket (mDNSResponder's included), and
// none of the Mach services that resolve names or fetch certificates
// outside the sandbox. This is what makes a program that ignores the proxy
// variables fail closed.
func TestProfileAllowListReachesOnlyTheProxy(t *testing.T) {
	sb := goldenSandboxes()["network-allow"]
	src, err := Profile(sb, ProfileOptions{Canon: fakeCanon, ProxyPort: 50123})
	if err != nil {
		t.Fatal(err)
	}
	p := mustRead(t, src, DefaultTag)
	for _, c := range []struct {
		op, path string
		want     bool
	}{
		{"network-outbound", "tcp localhost:50123", true},
		{"network-outbound", "tcp localhost:50124", false},
		{"network-outbound", "tcp localhost:53", false},
		{"network-outbound", "", false},
		{"network-outbound", "/private/var/run/mDNSResponder", false},
		{"network-outbound", "/private/var/run/docker.sock", false},
		{"network-bind", "", false},
		{"network-inbound", "", false},
		{"system-socket", "", false},
	} {
		if got := p.allows(t, c.op, c.path); got != c.want {
			t.Errorf("%s %q allowed = %v, want %v", c.op, c.path, got, c.want)
		}
	}
	for _, name := range []string{"com.apple.dnssd.service", "com.apple.SystemConfiguration.DNSConfiguration", "com.apple.trustd.agent", "com.apple.ocspd", "com.apple.networkd"} {
		if strings.Contains(src, quote(name)) {
			t.Errorf("the profile allows the Mach service %s", name)
		}
	}
	if strings.Contains(src, "/private/etc/resolv.conf") || !strings.Contains(src, "/private/etc/ssl/cert.pem") {
		t.Error("resolver files readable, or the certificates not")
	}
	if _, err := Profile(sb, ProfileOptions{Canon: fakeCanon, ProxyPort: 70000}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("port 70000: %v", err)
	}
}

// TestProfileLetsSSHRunCordonsProxyConnect: with an allow list and
// ProxyConnect, the sandbox may read (and so run) cordon's own executable,
// ssh's ProxyCommand, and no other file beside it; without an allow list
// ProxyConnect adds nothing.
func TestProfileLetsSSHRunCordonsProxyConnect(t *testing.T) {
	sb := goldenSandboxes()["network-allow"]
	without, err := Profile(sb, ProfileOptions{Canon: fakeCanon, ProxyPort: 50123})
	if err != nil {
		t.Fatal(err)
	}
	src, err := Profile(sb, ProfileOptions{Canon: fakeCanon, ProxyPort: 50123, ProxyConnect: goldenProxyConnect})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		src  string
		op   string
		path string
		want bool
	}{
		{without, "file-read-data", goldenProxyConnect, false},
		{src, "file-read-data", goldenProxyConnect, true},
		{src, "process-exec", goldenProxyConnect, true},
		{src, "file-write-data", goldenProxyConnect, false},
		{src, "file-read-data", "/Users/dev/go/bin/other", false},
		{src, "network-outbound", "tcp localhost:50124", false},
	} {
		if got := mustRead(t, c.src, DefaultTag).allows(t, c.op, c.path); got != c.want {
			t.Errorf("%s %q allowed = %v, want %v", c.op, c.path, got, c.want)
		}
	}
	off := goldenSandboxes()["network-on"]
	a, err := Profile(off, ProfileOptions{Canon: fakeCanon})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Profile(off, ProfileOptions{Canon: fakeCanon, ProxyConnect: goldenProxyConnect})
	if err != nil || a != b {
		t.Errorf("ProxyConnect changed a profile without an allow list (%v)", err)
	}
	for _, bad := range []string{"/usr/bin/a\n(allow default)", "bin/cordon"} {
		if _, err := Profile(sb, ProfileOptions{Canon: fakeCanon, ProxyConnect: bad}); !errors.Is(err, ErrUnsafeString) {
			t.Errorf("ProxyConnect %q: %v, want ErrUnsafeString", bad, err)
		}
	}
}

func TestUnsupported(t *testing.T) {
	base := func() *spec.Sandbox {
		return &spec.Sandbox{Root: "/Users/dev/proj", System: spec.System{Kind: spec.SystemHost}, RequireOSSandbox: true}
	}
	tests := []struct {
		name              string
		mod               func(*spec.Sandbox)
		refused, degraded int
		mention           string
	}{
		{"plain", func(*spec.Sandbox) {}, 0, 0, ""},
		{"remapped mount", func(s *spec.Sandbox) {
			s.Mounts = []spec.Mount{{Source: "/Users/dev/cache", Target: "/cache"}}
		}, 1, 0, "remapped mounts work on Linux"},
		{"remapped mount degradable? no", func(s *spec.Sandbox) {
			s.RequireOSSandbox = false
			s.Mounts = []spec.Mount{{Source: "/Users/dev/cache", Target: "/cache"}}
		}, 1, 0, "work on Linux"},
		{"same-path mount", func(s *spec.Sandbox) {
			s.Mounts = []spec.Mount{{Source: "/Users/dev/cache", Target: "/Users/dev/cache"}}
		}, 0, 0, ""},
		{"rootfs", func(s *spec.Sandbox) {
			s.System = spec.System{Kind: spec.SystemRootfs, Rootfs: "/Users/dev/rootfs"}
		}, 1, 0, "a rootfs works on Linux"},
		{"memory pids cpus", func(s *spec.Sandbox) {
			s.Limits = spec.Limits{Memory: 1 << 30, Pids: 100, CPUs: 1.5}
		}, 3, 0, "this works on Linux"},
		{"limits degraded", func(s *spec.Sandbox) {
			s.RequireOSSandbox = false
			s.Limits = spec.Limits{Memory: 1 << 30, Pids: 100, CPUs: 1.5}
		}, 0, 3, "not enforced on macOS"},
		{"timeout file size output are enforced", func(s *spec.Sandbox) {
			s.Limits = spec.Limits{Timeout: time.Second, FileSize: 1 << 20, Output: 1 << 20}
		}, 0, 0, ""},
		// Enforced by the run's proxy (see TestProfileAllowListReachesOnlyTheProxy).
		{"allow list", func(s *spec.Sandbox) {
			s.Network = spec.Network{Enabled: true, Allow: []string{"github.com:443"}}
		}, 0, 0, ""},
		{"allow list, degradation allowed", func(s *spec.Sandbox) {
			s.RequireOSSandbox = false
			s.Network = spec.Network{Enabled: true, Allow: []string{"github.com:443"}}
		}, 0, 0, ""},
		{"non-ascii deny below the workspace", func(s *spec.Sandbox) {
			s.Deny = []string{"/Users/dev/proj/café"}
		}, 1, 0, "Unicode"},
		{"non-ascii workspace, ascii deny", func(s *spec.Sandbox) {
			s.Root = "/Users/josé/proj"
			s.Deny = []string{"/Users/josé/proj/.env"}
		}, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := base()
			tt.mod(sb)
			refused, degraded := Unsupported(sb)
			if len(refused) != tt.refused || len(degraded) != tt.degraded {
				t.Fatalf("refused %q, degraded %q; want %d and %d", refused, degraded, tt.refused, tt.degraded)
			}
			all := strings.Join(append(refused, degraded...), "\n")
			if !strings.Contains(all, tt.mention) {
				t.Errorf("%q does not mention %q", all, tt.mention)
			}
			prof, err := Profile(sb, ProfileOptions{Canon: fakeCanon})
			if tt.refused > 0 {
				var ue *UnenforceableError
				if !errors.As(err, &ue) || !errors.Is(err, ErrUnenforceable) || !errors.Is(err, runner.ErrUnenforceable) {
					t.Fatalf("Profile error = %v, want an *UnenforceableError", err)
				}
				if prof != "" {
					t.Error("a refused sandbox still produced a profile")
				}
				if len(ue.Features) != tt.refused {
					t.Errorf("error lists %d features, want %d", len(ue.Features), tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("Profile: %v", err)
			}
			mustRead(t, prof, DefaultTag)
		})
	}
}

// hostileNames are path components that try to break out of a string or a
// regex literal, or to look like SBPL.
var hostileNames = []string{
	`a"b`,
	`a)b`,
	`a\b`,
	`a\"b`,
	`x") (allow default) ("`,
	`x" (allow file-write* (subpath "/")) "`,
	`#"x`,
	`a;b`,
	`a]b[^c`,
	`a$b^c`,
	`.*`,
	`(a|b)`,
	`a{1,2}+?`,
	`x\`,
	`" #"^/.*$" "`,
	`ﬁle ß Σ`, // non-ASCII in the workspace's own name is fine
}

// TestInjectionCannotChangeTheProfile builds profiles for workspaces, deny
// and protect paths with hostile names and checks that each reads back with
// the same structure as a benign profile, that every string decodes to the
// path it came from, and that the rules still mean what they should.
func TestInjectionCannotChangeTheProfile(t *testing.T) {
	// The hostile name is the workspace's and the mount's own name; the
	// deny and protect names below them must be ASCII (see Unsupported),
	// so they carry the ASCII part of the name.
	ascii := func(name string) string {
		return strings.Map(func(r rune) rune {
			if r >= 0x80 {
				return 'u'
			}
			return r
		}, name)
	}
	mk := func(name string) *spec.Sandbox {
		root := "/Users/dev/" + name
		return &spec.Sandbox{
			Root:             root,
			Deny:             []string{root + "/" + ascii(name) + "-secret"},
			Protect:          []string{root + "/.git/hooks", root + "/" + ascii(name) + "-protected"},
			Mounts:           []spec.Mount{{Source: "/Users/dev/data-" + name, Target: "/Users/dev/data-" + name, Readonly: true}},
			System:           spec.System{Kind: spec.SystemHost},
			RequireOSSandbox: true,
		}
	}
	for _, name := range hostileNames {
		t.Run(name, func(t *testing.T) {
			// The benign twin has the same components, so the same number
			// of parents: only the characters differ.
			// Pattern characters stay: a root that holds them makes every
			// deny and protect path below it a pattern in both.
			twin := strings.Map(func(r rune) rune {
				if r == '/' || strings.ContainsRune("*?[]", r) {
					return r
				}
				return 'b'
			}, name)
			benignSrc, err := Profile(mk(twin), ProfileOptions{Canon: fakeCanon})
			if err != nil {
				t.Fatal(err)
			}
			benign := mustRead(t, benignSrc, DefaultTag).skeleton()
			sb := mk(name)
			src, err := Profile(sb, ProfileOptions{Canon: fakeCanon})
			if err != nil {
				t.Fatal(err)
			}
			p := mustRead(t, src, DefaultTag)
			if got := p.skeleton(); strings.Join(got, "\n") != strings.Join(benign, "\n") {
				t.Fatalf("structure changed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(benign, "\n"))
			}
			subpaths := map[string]bool{}
			for _, r := range p.rules {
				if r.filter == "subpath" {
					subpaths[r.arg] = true
				}
			}
			if !subpaths[sb.Root] || !subpaths[sb.Mounts[0].Source] {
				t.Errorf("the workspace or mount does not decode to its own path; subpaths: %v", subpaths)
			}
			inside := sb.Root + "/file"
			secret := sb.Deny[0] + "/x"
			for _, c := range []struct {
				op, path string
				want     bool
			}{
				{"file-write-create", inside, true},
				{"file-read-data", inside, true},
				{"file-read-data", sb.Deny[0], false},
				{"file-read-data", secret, false},
				{"file-read-data", strings.ToUpper(sb.Deny[0]), false},
				{"file-write-create", sb.Protect[1], false},
				{"file-write-create", sb.Protect[1] + "/x", false},
				{"file-read-data", sb.Protect[1], true},
				{"file-write-create", sb.Mounts[0].Source + "/x", false},
				{"file-read-data", sb.Mounts[0].Source + "/x", true},
				{"file-write-create", "/Users/dev/other", false},
				{"file-read-data", "/Users/dev/other", false},
				{"file-write-create", "/", false},
			} {
				if got := p.allows(t, c.op, c.path); got != c.want {
					t.Errorf("%s %q = %v, want %v", c.op, c.path, got, c.want)
				}
			}
		})
	}
}

// TestSecurityUnsafeStringsRefused: control characters cannot be escaped
// safely, so Profile refuses them and produces no profile.
func TestSecurityUnsafeStringsRefused(t *testing.T) {
	long := "/Users/dev/" + strings.Repeat("abcdefgh/", 40)
	tests := []struct {
		name string
		mod  func(*spec.Sandbox)
		opts ProfileOptions
	}{
		{"newline in workspace", func(s *spec.Sandbox) { s.Root = "/Users/dev/a\n(allow default)" }, ProfileOptions{}},
		{"carriage return in mount", func(s *spec.Sandbox) {
			s.Mounts = []spec.Mount{{Source: "/Users/dev/a\rb", Target: "/Users/dev/a\rb"}}
		}, ProfileOptions{}},
		{"tab in deny", func(s *spec.Sandbox) { s.Deny = []string{"/Users/dev/proj/a\tb"} }, ProfileOptions{}},
		{"NUL in protect", func(s *spec.Sandbox) { s.Protect = []string{"/Users/dev/proj/a\x00b"} }, ProfileOptions{}},
		{"DEL", func(s *spec.Sandbox) { s.Deny = []string{"/Users/dev/proj/a\x7fb"} }, ProfileOptions{}},
		{"C1 control", func(s *spec.Sandbox) { s.Deny = []string{"/Users/dev/proj/a\u0085b"} }, ProfileOptions{}},
		{"invalid UTF-8", func(s *spec.Sandbox) { s.Deny = []string{"/Users/dev/proj/a\xffb"} }, ProfileOptions{}},
		{"relative deny", func(s *spec.Sandbox) { s.Deny = []string{".env"} }, ProfileOptions{}},
		{"too long for a profile string", func(s *spec.Sandbox) { s.Deny = []string{long} }, ProfileOptions{}},
		{"tag breaking out", func(*spec.Sandbox) {}, ProfileOptions{Tag: `x") (allow default) ("`}},
		{"tag with newline", func(*spec.Sandbox) {}, ProfileOptions{Tag: "x\ny"}},
		{"canon returning a relative path", func(*spec.Sandbox) {}, ProfileOptions{Canon: func(string) string { return "rel" }}},
		{"canon returning a newline", func(*spec.Sandbox) {}, ProfileOptions{Canon: func(p string) string { return p + "\n" }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := workspaceSandbox()
			tt.mod(sb)
			if tt.opts.Canon == nil {
				tt.opts.Canon = fakeCanon
			}
			prof, err := Profile(sb, tt.opts)
			if !errors.Is(err, ErrUnsafeString) {
				t.Fatalf("err = %v, want ErrUnsafeString", err)
			}
			if prof != "" {
				t.Errorf("a profile was produced:\n%s", prof)
			}
		})
	}
}

// TestSecurityDenyIgnoresCase: on a case-insensitive filesystem ~/.SSH is
// ~/.ssh, so deny and protect rules must match every case, including the
// long s and the Kelvin sign that the filesystem folds to s and k.
func TestSecurityDenyIgnoresCase(t *testing.T) {
	sb := workspaceSandbox()
	sb.Root = "/Users/dev"
	sb.Deny = []string{"/Users/dev/.ssh"}
	sb.Protect = protectAll(sb.Root, spec.DefaultProtect)
	p := mustRead(t, mustProfile(t, sb), DefaultTag)
	for _, path := range []string{"/Users/dev/.ssh", "/Users/dev/.SSH/id_rsa", "/users/DEV/.Ssh/x", "/Users/dev/.ſſh/x", "/Users/dev/.bashrc/../.ssh"} {
		path = filepath.Clean(path)
		if p.allows(t, "file-read-data", path) || p.allows(t, "file-write-create", path) {
			t.Errorf("%s is reachable", path)
		}
	}
	for _, path := range []string{"/Users/dev/.git/hooks/pre-commit", "/Users/dev/.GIT/HOOKS/pre-commit", "/Users/dev/.git/hooKſ/x", "/Users/dev/.git/hooKS/x"} {
		if p.allows(t, "file-write-create", path) {
			t.Errorf("protected %s is writable", path)
		}
	}
	if !p.allows(t, "file-read-data", "/Users/dev/.sshx") || !p.allows(t, "file-write-create", "/Users/dev/notes.txt") {
		t.Error("the deny is wider than its path")
	}
}

// TestSecurityGuardedParentsCannotMove: renaming, removing or creating a
// directory above a protect or deny path is refused, so `mv .git x` cannot
// carry .git/hooks out from under its rule; siblings stay writable.
func TestSecurityGuardedParentsCannotMove(t *testing.T) {
	sb := goldenSandboxes()["deny-protect"]
	p := mustRead(t, mustProfile(t, sb), DefaultTag)
	for _, path := range []string{
		"/Users/dev/proj/.git",         // parent of .git/hooks: mv .git x
		"/Users/dev/proj/.GIT",         // creating it in another case
		"/Users/dev/proj/ci",           // parent of ci/deploy.sh
		"/Users/dev/proj",              // the workspace itself: mv proj ../data/p
		"/Users/dev/proj/config",       // parent of a deny path named through a link
		"/Users/dev/proj/vendor",       // a read-only mount nested in the workspace
		"/Users/dev/proj/vendor/x",     // inside it
		"/Users/dev/proj/.git/hooks",   // the protected path itself
		"/Users/dev/proj/secrets",      // a deny path
		"/Users/dev/proj/ci/deploy.sh", // a protected file
	} {
		for _, op := range []string{"file-write-unlink", "file-write-create", "file-write-data"} {
			if p.allows(t, op, path) {
				t.Errorf("%s %s is allowed", op, path)
			}
		}
	}
	for _, path := range []string{"/Users/dev/proj/src/a.go", "/Users/dev/proj/.git/config", "/Users/dev/proj/secrets/key", "/usr/bin/env"} {
		if p.allows(t, "file-link", path) {
			t.Errorf("a hard link of %s is allowed", path)
		}
	}
	for _, path := range []string{"/Users/dev/proj/.git/HEAD", "/Users/dev/proj/ci/other.sh", "/Users/dev/proj/src/a.go", "/Users/dev/proj/vendor/patched/x", "/Users/dev/data/x"} {
		if !p.allows(t, "file-write-unlink", path) || !p.allows(t, "file-write-create", path) {
			t.Errorf("%s is not writable", path)
		}
	}
}

// TestSecuritySystemIsReadOnlyAndSecretsMasked: the host system is readable,
// never writable, and its secrets are masked in both spellings of /etc; the
// Data volume (every user's files under a second name) is not readable.
func TestSecuritySystemIsReadOnlyAndSecretsMasked(t *testing.T) {
	p := mustRead(t, mustProfile(t, workspaceSandbox()), DefaultTag)
	for _, path := range []string{"/usr/bin/env", "/bin/sh", "/private/etc/hosts", "/System/Library/dyld/x", "/usr/lib/libSystem.B.dylib"} {
		if !p.allows(t, "file-read-data", path) {
			t.Errorf("%s is not readable", path)
		}
		if p.allows(t, "file-write-data", path) {
			t.Errorf("%s is writable", path)
		}
	}
	for _, path := range []string{"/private/etc/master.passwd", "/etc/master.passwd", "/private/etc/sudoers", "/private/etc/ssh/ssh_host_ed25519_key", "/private/etc/SSH/ssh_host_rsa_KEY", "/private/etc/sudoers.d/x",
		"/System/Volumes/Data/Users/dev/.ssh/id_rsa", "/System/Volumes/Data/Users/dev/proj/x", "/Users/other/x", "/private/var/root/x", "/Library/Keychains/System.keychain"} {
		if p.allows(t, "file-read-data", path) {
			t.Errorf("%s is readable", path)
		}
	}
	if !p.allows(t, "file-read-data", "/private/etc/ssh/ssh_config") {
		t.Error("the secret pattern masks more than host keys")
	}
}

// TestSecurityReadonlyWorkspace: a readonly workspace is readable, not
// writable, and a read-write mount nested in it is writable.
func TestSecurityReadonlyWorkspace(t *testing.T) {
	sb := goldenSandboxes()["readonly"]
	sb.Mounts = []spec.Mount{{Source: "/Users/dev/proj/out", Target: "/Users/dev/proj/out"}}
	p := mustRead(t, mustProfile(t, sb), DefaultTag)
	if p.allows(t, "file-write-create", "/Users/dev/proj/x") || !p.allows(t, "file-read-data", "/Users/dev/proj/x") {
		t.Error("readonly workspace is writable or unreadable")
	}
	if !p.allows(t, "file-write-create", "/Users/dev/proj/out/x") {
		t.Error("rw mount nested in a readonly workspace is not writable")
	}
	if p.allows(t, "file-write-create", "/Users/dev/proj/OUT/x") {
		t.Error("a case variant of the nested rw mount is writable: allows must stay case-sensitive")
	}
}

func mustProfile(t *testing.T, sb *spec.Sandbox) string {
	t.Helper()
	src, err := Profile(sb, ProfileOptions{Canon: fakeCanon})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestPathRegex(t *testing.T) {
	tests := []struct {
		path    string
		subtree bool
		match   []string
		nomatch []string
	}{
		{"/a/.env", true, []string{"/a/.env", "/A/.ENV", "/a/.env/x"}, []string{"/a/xenv", "/a/.envx", "/a/.en", "/b/.env"}},
		{"/a/x.y", false, []string{"/a/x.y", "/a/X.Y"}, []string{"/a/x.y/z", "/a/xzy"}},
		{"/a/[b]", true, []string{"/a/[b]", "/a/xBx"}, []string{"/a/b", "/a//b/"}},
		{"/a/s", false, []string{"/a/s", "/a/S", "/a/ſ"}, []string{"/a/t"}},
		{"/", true, []string{"/", "/x"}, nil},
		{"/a/é", false, []string{"/a/é", "/a/É"}, []string{"/a/e"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			re := pathRegex(tt.path, tt.subtree)
			if strings.ContainsAny(re, "\\\"") {
				t.Fatalf("regex %q holds a backslash or a quote", re)
			}
			src := "(version 1)\n(deny default (with message \"t\"))\n(deny file-read* (regex " + regexLiteral(re) + ") (with message \"t\"))\n"
			p := mustRead(t, src, "t")
			for _, m := range tt.match {
				if !p.rules[0].re.MatchString(m) {
					t.Errorf("%s does not match %q", re, m)
				}
			}
			for _, m := range tt.nomatch {
				if p.rules[0].re.MatchString(m) {
					t.Errorf("%s matches %q", re, m)
				}
			}
		})
	}
}

func TestCanonicalize(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	want := privateForm(Canonicalize(real))
	tests := []struct{ in, want string }{
		{filepath.Join(dir, "link"), want},
		{filepath.Join(dir, "link", "missing", "file"), filepath.Join(want, "missing", "file")},
		{"/tmp/cordon-no-such-dir/x", "/private/tmp/cordon-no-such-dir/x"},
		{"/etc/hosts", privateForm(Canonicalize("/etc/hosts"))},
	}
	for _, tt := range tests {
		if got := Canonicalize(tt.in); got != tt.want {
			t.Errorf("Canonicalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Canonicalize("/etc/hosts"); !strings.HasPrefix(got, "/private/") {
		t.Errorf("Canonicalize(/etc/hosts) = %q, want the /private spelling", got)
	}
}

func TestFirmlinks(t *testing.T) {
	tests := []struct{ in, private, alias string }{
		{"/tmp", "/private/tmp", "/private/tmp"},
		{"/tmp/x", "/private/tmp/x", "/private/tmp/x"},
		{"/private/var/x", "/private/var/x", "/var/x"},
		{"/etcetera", "/etcetera", ""},
		{"/Users/x", "/Users/x", ""},
	}
	for _, tt := range tests {
		if got := privateForm(tt.in); got != tt.private {
			t.Errorf("privateForm(%q) = %q, want %q", tt.in, got, tt.private)
		}
		if got := firmlinkAlias(tt.in); got != tt.alias {
			t.Errorf("firmlinkAlias(%q) = %q, want %q", tt.in, got, tt.alias)
		}
	}
}
