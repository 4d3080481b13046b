package darwin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// buildTree creates entries under dir: "dir a", "file a/b", "symlink c
// TARGET".
func buildTree(t *testing.T, dir string, entries ...string) {
	t.Helper()
	for _, e := range entries {
		f := strings.Fields(e)
		p := filepath.Join(dir, f[1])
		var err error
		switch f[0] {
		case "dir":
			err = os.MkdirAll(p, 0o755)
		case "file":
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.WriteFile(p, []byte("x"), 0o644)
			}
		case "symlink":
			err = os.Symlink(f[2], p)
		default:
			t.Fatalf("bad tree entry %q", e)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestAgreementWithMountTable runs the same sandbox through both policy
// checks: mounts.Table's CanRead and CanWrite, and the Seatbelt profile's
// file rules, evaluated on the path Seatbelt would see (links resolved, the
// /private spelling) and on its other spelling. They must agree on every
// path of the corpus, under both readings of Seatbelt's precedence.
//
// Left out, because the two differ by design (each has its own test):
//
//   - case variants (ws/.ENV): the profile refuses them, as a
//     case-insensitive filesystem must; this Linux filesystem is
//     case-sensitive, so the mount table sees another file
//     (TestSecurityDenyIgnoresCase);
//   - the parents of deny, protect and nested read-only paths (ws, ws/.git):
//     the profile refuses to rename or remove them, the table lets the
//     files in them be written (TestSecurityGuardedParentsCannotMove);
//   - the start-up files (dyld, /System/Library, /dev/null, time zones) and
//     the developer tools, which the profile lets every process read and
//     the table does not model (TestStartupReadsAreTheDocumentedOnes);
//   - /lib, /lib64 and the other Linux system directories, which macOS does
//     not have;
//   - a write through a symbolic link that lies in a protect path: the table
//     refuses it, Seatbelt judges only the link's target;
//   - a workspace or mount whose own path is a symbolic link: Seatbelt sees
//     only the resolved name, the table only the configured one.
func TestAgreementWithMountTable(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	buildTree(t, base,
		"file ws/src/main.go",
		"file ws/.env",
		"file ws/secrets/key",
		"file ws/.git/hooks/pre-commit",
		"file ws/.git/config",
		"file ws/.git/HEAD",
		"file ws/vendor/lib.go",
		"file ws/vendor/out/gen.go",
		"dir ws/empty",
		"symlink ws/link-etc /etc",
		"symlink ws/link-outside "+filepath.Join(base, "outside"),
		"symlink ws/link-env .env",
		"symlink ws/link-secrets secrets",
		"symlink ws/link-vendor vendor",
		"symlink ws/link-data "+filepath.Join(base, "data"),
		"symlink ws/dangling nowhere/x",
		"file data/d.txt",
		"file ro/r.txt",
		"file outside/secret.txt",
	)
	sb := &spec.Sandbox{
		Root:    ws,
		Deny:    []string{filepath.Join(ws, ".env"), filepath.Join(ws, "secrets")},
		Protect: protectAll(ws, spec.DefaultProtect),
		Mounts: []spec.Mount{
			{Source: filepath.Join(ws, "vendor"), Target: filepath.Join(ws, "vendor"), Readonly: true},
			{Source: filepath.Join(ws, "vendor/out"), Target: filepath.Join(ws, "vendor/out")},
			{Source: filepath.Join(base, "data"), Target: filepath.Join(base, "data")},
			{Source: filepath.Join(base, "ro"), Target: filepath.Join(base, "ro"), Readonly: true},
		},
		System:           spec.System{Kind: spec.SystemHost},
		RequireOSSandbox: true,
	}
	table, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	src, err := Profile(sb, ProfileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := mustRead(t, src, DefaultTag)

	corpus := []string{
		ws, // reading the workspace itself (writing it is a guarded parent)
		ws + "/src", ws + "/src/main.go", ws + "/src/new.go", ws + "/new/dir/file", ws + "/empty/x",
		ws + "/.env", ws + "/.env/x", ws + "/secrets", ws + "/secrets/key", ws + "/secrets/new",
		ws + "/.envrc", ws + "/.env.example",
		ws + "/.git/hooks", ws + "/.git/hooks/pre-commit", ws + "/.git/hooks/new", ws + "/.git/config", ws + "/.git/HEAD", ws + "/.git/objects/ab",
		ws + "/.bashrc", ws + "/.vscode/settings.json", ws + "/.claude/x", ws + "/.mcp.json",
		ws + "/vendor/lib.go", ws + "/vendor/new.go", ws + "/vendor/out/gen.go", ws + "/vendor/out/new.go",
		base + "/data/d.txt", base + "/data/new", base + "/ro/r.txt", base + "/ro/new",
		base + "/outside/secret.txt", base + "/outside", base + "/elsewhere",
		"/etc/hosts", "/etc/passwd", "/usr/bin/env", "/usr/share/doc", "/bin/sh", "/sbin/x",
		"/root/x", "/home/x", "/opt/x", "/var/log/x", "/tmp/x", "/Users/x",
		ws + "/link-etc/hosts", ws + "/link-etc/shadow", ws + "/link-outside/secret.txt",
		ws + "/link-env", ws + "/link-secrets/key", ws + "/link-vendor/lib.go", ws + "/link-vendor/out/x",
		ws + "/link-data/d.txt", ws + "/dangling",
	}
	// The mount table masks the host secrets that exist on this host, the
	// profile a fixed list; compare the ones this host has.
	for _, secret := range []string{"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssl/private"} {
		if _, err := os.Lstat(secret); err == nil {
			corpus = append(corpus, secret, secret+"/x")
		}
	}
	counts := map[string]int{}
	for _, path := range corpus {
		counts[fmtBool("read", table.CanRead(path))]++
		counts[fmtBool("write", table.CanWrite(path))]++
		t.Run(strings.TrimPrefix(path, base), func(t *testing.T) {
			seen := Canonicalize(path)
			spellings := []string{seen}
			if a := firmlinkAlias(seen); a != "" {
				spellings = append(spellings, a)
			}
			writeOp := "file-write-create"
			if _, err := os.Stat(path); err == nil {
				writeOp = "file-write-data"
			}
			wantRead, wantWrite := table.CanRead(path), table.CanWrite(path)
			for _, s := range spellings {
				if got := p.allows(t, "file-read-data", s); got != wantRead {
					t.Errorf("read %s (as %s): profile %v, mount table %v (%v)", path, s, got, wantRead, table.Check(path, false))
				}
				if path == ws {
					continue
				}
				if got := p.allows(t, writeOp, s); got != wantWrite {
					t.Errorf("%s %s (as %s): profile %v, mount table %v (%v)", writeOp, path, s, got, wantWrite, table.Check(path, true))
				}
			}
		})
	}
	// A corpus where everything is allowed, or nothing, proves little.
	for _, k := range []string{"read allowed", "read refused", "write allowed", "write refused"} {
		if counts[k] < 5 {
			t.Errorf("only %d corpus paths with %s: %v", counts[k], k, counts)
		}
	}
}

func fmtBool(op string, ok bool) string {
	if ok {
		return op + " allowed"
	}
	return op + " refused"
}

// TestStartupReadsAreTheDocumentedOnes pins what the profile lets every
// process read beyond the mount table: the start-up files, and with
// `system: host` the developer tools; and that the rest of /System, the
// user data volume in particular, stays out.
func TestStartupReadsAreTheDocumentedOnes(t *testing.T) {
	none := &spec.Sandbox{System: spec.System{Kind: spec.SystemNone}, RequireOSSandbox: true}
	p := mustRead(t, mustProfile(t, none), DefaultTag)
	for _, path := range []string{
		"/usr/lib/dyld", "/usr/lib/libSystem.B.dylib", "/System/Library/Frameworks/CoreFoundation.framework/x",
		"/System/Volumes/Preboot/Cryptexes/OS/System/Library/dyld/dyld_shared_cache_arm64e",
		"/System/Cryptexes/OS/x", "/private/var/db/dyld/x", "/usr/share/locale/en_US.UTF-8/LC_CTYPE",
		"/usr/share/terminfo/78/xterm-256color", "/private/var/db/timezone/zoneinfo/UTC", "/private/etc/localtime",
		"/private/var/select/sh", "/Library/Apple/usr/libexec/oah/x", "/dev/null", "/dev/urandom", "/dev/fd/3",
	} {
		if !p.allows(t, "file-read-data", path) {
			t.Errorf("start-up file %s is not readable", path)
		}
	}
	for _, path := range []string{
		"/System/Volumes/Data/Users/dev/x", "/System/Volumes/Data/private/etc/master.passwd", "/System/Applications/x",
		"/usr/bin/env", "/bin/sh", "/private/etc/hosts", "/Library/Developer/CommandLineTools/usr/bin/git", "/dev/disk0", "/dev/ttys001",
	} {
		if p.allows(t, "file-read-data", path) {
			t.Errorf("%s is readable with system: none and no mounts", path)
		}
	}
	for _, path := range []string{"/dev/null", "/dev/tty", "/dev/fd/1"} {
		if !p.allows(t, "file-write-data", path) {
			t.Errorf("%s is not writable", path)
		}
	}
	if p.allows(t, "file-write-data", "/dev/urandom") || p.allows(t, "file-write-data", "/dev/ttys001") {
		t.Error("a read-only device is writable")
	}
	if !p.allows(t, "file-ioctl", "/dev/ttys001") {
		t.Error("ioctl on the run's pty is refused")
	}
	host := mustRead(t, mustProfile(t, workspaceSandbox()), DefaultTag)
	if !host.allows(t, "file-read-data", "/Library/Developer/CommandLineTools/usr/bin/git") {
		t.Error("system: host does not expose the developer tools")
	}
}
