package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

func TestCandidatePaths(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string
	}{
		{"touch: cannot touch '/usr/x': Read-only file system", "/usr/x"},
		{"bash: /usr/x: Read-only file system", "/usr/x"},
		{"sh: 1: cannot create /usr/x: Read-only file system", "/usr/x"},
		{"PermissionError: [Errno 13] Permission denied: '/etc/x'", "/etc/x"},
		{"OSError: [Errno 30] Read-only file system: 'rel/x'", "rel/x"},
		{"Error: EROFS: read-only file system, open '/usr/lib/x'", "/usr/lib/x"},
		{"open /opt/x: read-only file system", "/opt/x"},
		{"error: could not lock config file .git/config: Read-only file system", ".git/config"},
		{"fatal: Unable to create '/w/.git/index.lock': Read-only file system", "/w/.git/index.lock"},
		{"cat: /root/.ssh/id_rsa: No such file or directory", "/root/.ssh/id_rsa"},
		{"mkdir: cannot create directory ‘/usr/q’: Read-only file system", "/usr/q"},
		{"sh: 1: cannot create to-etc: Read-only file system", "to-etc"},
		{"cat: .env: Permission denied", ".env"},
		{"/usr/x: Read-only file system", "/usr/x"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got := candidatePaths(tc.line)
			if len(got) == 0 || got[0] != tc.want {
				t.Fatalf("candidatePaths(%q) = %q, want first %q", tc.line, got, tc.want)
			}
		})
	}
}

func TestClassifyDenial(t *testing.T) {
	root := t.TempDir()
	ro := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "exists"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, ".git", "worktrees", "w"), 0o755); err != nil {
		t.Fatal(err)
	}
	sb := &spec.Sandbox{
		Root:    root,
		Mounts:  []spec.Mount{{Source: ro, Target: ro, Readonly: true}},
		Protect: []string{filepath.Join(root, ".git/hooks")},
		Deny:    []string{filepath.Join(root, ".env")},
		System:  spec.System{Kind: spec.SystemHost},
	}
	table, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, stderr string
		network      bool
		denied       bool
		path         string
		detail       string // a substring of the detail
	}{
		{"usr read-only", "touch: cannot touch '/usr/x': Read-only file system", false, true, "/usr/x", root},
		{"ro mount", "bash: " + ro + "/f: Read-only file system", false, true, ro + "/f", root},
		{"protect relative", "error: could not lock config file .git/hooks/pre-commit: Read-only file system", false, true, filepath.Join(root, ".git/hooks/pre-commit"), "protect"},
		{"python outside", "PermissionError: [Errno 13] Permission denied: '" + outside + "/x'", false, true, outside + "/x", root},
		{"node erofs", "Error: EROFS: read-only file system, open '/etc/hosts'", false, true, "/etc/hosts", root},
		{"hidden but exists", "cat: " + outside + "/exists: No such file or directory", false, true, outside + "/exists", root},
		{"missing in a hidden dir", "cat: " + outside + "/nope: No such file or directory", false, true, outside + "/nope", root},
		{"missing everywhere", "cat: /nonexistent-cordon/nope: No such file or directory", false, false, "", ""},
		{"bare relative create", "sh: 1: cannot create .git/hooks/x: Read-only file system", false, true, filepath.Join(root, ".git/hooks/x"), "protect"},
		{"bare relative name", "cat: .env: Permission denied", false, true, filepath.Join(root, ".env"), "deny"},
		{"touch in hidden dir", "touch: cannot touch '" + outside + "/new.txt': No such file or directory", false, true, outside + "/new.txt", root},
		{"busy guarded parent", "mv: cannot move '.git' to '.git-moved': Device or resource busy", false, true, filepath.Join(root, ".git"), ".git/hooks"},
		{"busy protected file", "rm: cannot remove '.git/hooks': Device or resource busy", false, true, filepath.Join(root, ".git/hooks"), "protect"},
		{"missing inside workspace", "cat: " + root + "/nope: No such file or directory", false, false, "", ""},
		{"writable path, real EACCES", "bash: " + root + "/f: Permission denied", false, false, "", ""},
		{"readable path, read refused by host permissions", "cat: /etc/hostname: Permission denied", false, false, "", ""},
		{"hidden path, read refused", "cat: " + outside + "/exists: Permission denied", false, true, outside + "/exists", root},
		{"create outside every mount", "sh: 1: cannot create " + outside + "/x: Directory nonexistent", false, true, outside + "/x", "cannot write " + outside + "/x: outside the sandbox; writable: " + root},
		{"mkdir outside every mount", "mkdir: cannot create directory ‘" + outside + "/d’: No such file or directory", false, true, outside + "/d", "cannot write " + outside + "/d: outside the sandbox; writable: " + root},
		{"touch outside every mount", "touch: cannot touch '" + outside + "/t': No such file or directory", false, true, outside + "/t", "cannot write " + outside + "/t: outside the sandbox; writable: " + root},
		{"python write outside", "PermissionError: [Errno 13] Permission denied: '" + outside + "/p'", false, true, outside + "/p", "cannot write " + outside + "/p: outside the sandbox; writable: " + root},
		{"read outside stays a read", "cat: " + outside + "/exists: No such file or directory", false, true, outside + "/exists", "cannot read " + outside + "/exists: outside the sandbox; readable: "},
		{"python read of a deny path", "PermissionError: [Errno 13] Permission denied: '.env'", false, true, filepath.Join(root, ".env"), "cannot read " + filepath.Join(root, ".env") + ": denied"},
		{"node read of a deny path", "Error: EACCES: permission denied, open '" + root + "/.env'", false, true, filepath.Join(root, ".env"), "cannot read " + filepath.Join(root, ".env") + ": denied"},
		{"python write of a deny path", "PermissionError: [Errno 13] Permission denied: '.env' for writing", false, true, filepath.Join(root, ".env"), "cannot write " + filepath.Join(root, ".env")},
		{"dash cannot open a hidden path", "sh: 1: cannot open " + outside + "/exists: No such file", false, true, outside + "/exists", "cannot read " + outside + "/exists: outside the sandbox"},
		{"dash cannot open a missing path", "sh: 1: cannot open " + root + "/nope: No such file", false, false, "", ""},
		{"git worktree metadata hidden", "fatal: not a git repository: " + outside + "/.git/worktrees/w", false, true, outside + "/.git/worktrees/w",
			"cannot read " + outside + "/.git/worktrees/w: outside the sandbox; readable: "},
		{"git worktree hint", "fatal: not a git repository: " + outside + "/.git/worktrees/w", false, true, outside + "/.git/worktrees/w",
			"to use git here, mount it (--mount " + outside + "/.git:" + outside + "/.git, with :ro to read only)"},
		{"git worktree metadata missing", "fatal: not a git repository: " + outside + "/nope/.git/worktrees/gone", false, false, "", ""},
		{"network off", "curl: (6) Could not resolve host: example.com", false, true, "", "network"},
		{"network on is not ours", "curl: (6) Could not resolve host: example.com", true, false, "", ""},
		{"unrelated", "error: something broke", false, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := *sb
			s.Network.Enabled = tc.network
			d, ok := ClassifyDenial(table, &s, root, tc.stderr)
			if ok != tc.denied {
				t.Fatalf("denied = %v (%+v), want %v", ok, d, tc.denied)
			}
			if !ok {
				return
			}
			if d.Path != tc.path {
				t.Fatalf("path = %q, want %q", d.Path, tc.path)
			}
			if !strings.Contains(d.Detail, tc.detail) {
				t.Fatalf("detail %q lacks %q", d.Detail, tc.detail)
			}
		})
	}
}

// TestClassifyReadsOnly is what a session exec believes of its stderr
// (readDenials): reads the policy refuses, in every wording, and never a
// write, which only the broker's record may explain.
func TestClassifyReadsOnly(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "exists"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := &spec.Sandbox{Root: root, Deny: []string{filepath.Join(root, ".env")}, Protect: []string{filepath.Join(root, ".git/hooks")},
		System: spec.System{Kind: spec.SystemHost}}
	table, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, stderr, detail string // detail "": not explained
	}{
		{"python read of a deny path", "PermissionError: [Errno 13] Permission denied: '.env'", "cannot read " + root + "/.env: denied"},
		{"node read of a deny path", "Error: EACCES: permission denied, open '.env'", "cannot read " + root + "/.env: denied"},
		{"cat of a deny path", "cat: .env: Permission denied", "cannot read " + root + "/.env: denied"},
		{"dash redirect from a hidden path", "sh: 1: cannot open " + outside + "/exists: No such file", "cannot read " + outside + "/exists"},
		{"a write is the broker's", "sh: 1: cannot create .git/hooks/x: Permission denied", ""},
		{"read-only is the broker's", "touch: cannot touch '/usr/x': Read-only file system", ""},
		{"python write wording", "PermissionError: [Errno 13] Permission denied: '.git/hooks/x' for writing", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := classifyDenial(table, sb, root, tc.stderr, true)
			if ok != (tc.detail != "") || !strings.Contains(d.Detail, tc.detail) {
				t.Fatalf("explained %v: %q, want %q", ok, d.Detail, tc.detail)
			}
		})
	}
}
