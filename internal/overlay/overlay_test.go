package overlay

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// tree builds files under root from lines: "dir a", "file a/b CONTENT",
// "exec a/c CONTENT", "symlink l TARGET", "whiteout w", "opaque d".
func tree(t *testing.T, root string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		f := strings.SplitN(l, " ", 3)
		p := filepath.Join(root, f[1])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch f[0] {
		case "dir":
			err = os.MkdirAll(p, 0o755)
		case "file", "exec":
			mode := os.FileMode(0o644)
			if f[0] == "exec" {
				mode = 0o755
			}
			err = os.WriteFile(p, []byte(strings.ReplaceAll(f[2], `\n`, "\n")), mode)
			if err == nil {
				err = os.Chmod(p, mode)
			}
		case "symlink":
			err = os.Symlink(f[2], p)
		case "whiteout":
			err = unix.Mknod(p, unix.S_IFCHR, 0)
			if errors.Is(err, unix.EPERM) {
				t.Skip("this user cannot make a whiteout (char 0/0)")
			}
		case "opaque":
			if err = os.MkdirAll(p, 0o755); err == nil {
				err = unix.Setxattr(p, "user.overlay.opaque", []byte("y"), 0)
			}
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EPERM) {
				t.Skip("user xattrs are not supported here")
			}
		default:
			t.Fatalf("tree: %q", l)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// newTestOverlay is an overlay of a fresh workspace holding lower, with
// upper written into its upper layer after it started.
func newTestOverlay(t *testing.T, lower, upper []string) *Overlay {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	tree(t, ws, append([]string{"dir ."}, lower...)...)
	st, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	o, release, err := st.Start("t", ws)
	if err != nil {
		t.Fatal(err)
	}
	release()
	tree(t, o.Upper(), upper...)
	return o
}

func summary(cs []Change) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, string(c.Kind[0])+":"+c.Path)
	}
	return strings.Join(parts, " ")
}

func TestChanges(t *testing.T) {
	tests := []struct {
		name         string
		lower, upper []string
		want         string
	}{
		{"added", nil, []string{"file a x"}, "a:a"},
		{"modified", []string{"file a x"}, []string{"file a y"}, "m:a"},
		{"copied up unchanged", []string{"file a x"}, []string{"file a x"}, ""},
		{"mode only", []string{"file a x"}, []string{"exec a x"}, "m:a"},
		{"whiteout file", []string{"file a x"}, []string{"whiteout a"}, "d:a"},
		{"whiteout dir", []string{"file d/a x", "file d/b y"}, []string{"whiteout d"}, "d:d d:d/a d:d/b"},
		{"whiteout dir beside d-x", []string{"file d/a x"}, []string{"whiteout d", "file d-x y"}, "d:d d:d/a a:d-x"},
		{"whiteout of nothing", nil, []string{"whiteout a"}, ""},
		{"opaque dir", []string{"file d/a x", "file d/b y"}, []string{"opaque d", "file d/b z"}, "d:d/a m:d/b"},
		{"new dir", nil, []string{"file d/a x"}, "a:d a:d/a"},
		{"file to symlink", []string{"file a x"}, []string{"symlink a b"}, "d:a a:a"},
		{"dir to file", []string{"file d/a x"}, []string{"file d y"}, "d:d a:d d:d/a"},
		{"not through a host symlink", []string{"symlink s /etc"}, []string{"opaque s", "file s/passwd x"}, "d:s a:s a:s/passwd"},
		{"new tree", nil, []string{"file d/e/a x", "symlink d/l a", "whiteout d/w", "file d-x y"}, "a:d a:d/e a:d/e/a a:d/l a:d-x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newTestOverlay(t, tt.lower, tt.upper)
			cs, err := o.Changes()
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(cs); got != tt.want {
				t.Errorf("changes = %q, want %q", got, tt.want)
			}
			// A run's result: the same files, found without a stat each.
			var want []string
			for _, c := range cs {
				if !c.Dir() && (len(want) == 0 || want[len(want)-1] != c.Path) {
					want = append(want, c.Path)
				}
			}
			paths, err := o.ChangedPaths()
			if err != nil || strings.Join(paths, " ") != strings.Join(want, " ") {
				t.Errorf("ChangedPaths = %q, %v; want %q", paths, err, want)
			}
		})
	}
}

// TestDiffGitApplies checks that `git apply --check` takes the patch of
// every kind of change, and that applying it makes the overlay's tree.
func TestDiffGitApplies(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	o := newTestOverlay(t,
		[]string{"file keep k\\n", "file mod 1\\n2\\n3\\n4\\n5\\n6\\n7\\n8\\n9\\n10\\n", "file gone a\\nb\\n", "file chmod x\\n", "file bin a\x00b", "file nonl a"},
		[]string{"file mod 1\\n2\\nthree\\n4\\n5\\n6\\n7\\n8\\nnine\\n10\\n", "whiteout gone", "exec chmod x\\n", "file bin a\x00c",
			"file nonl a\\nb", "file new/one n\\n", "symlink link keep", "file empty "})
	cs, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	var patch bytes.Buffer
	if err := o.WriteDiff(&patch, cs, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"deleted file mode 100644", "old mode 100644\nnew mode 100755", "new file mode 120000",
		"GIT binary patch", "\\ No newline at end of file", "@@ -1,10 +1,10 @@"} {
		if !strings.Contains(patch.String(), want) {
			t.Errorf("patch lacks %q:\n%s", want, patch.String())
		}
	}
	cmd := exec.Command("git", "apply", "-v", "-")
	cmd.Dir = o.Workspace
	cmd.Stdin = bytes.NewReader(patch.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\n%s", err, out, patch.String())
	}
	// The workspace now is the overlay's view: the diff is empty.
	cs, err = o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 0 {
		t.Errorf("after git apply, changes = %s", summary(cs))
	}
}

func TestLineDiff(t *testing.T) {
	tests := []struct{ a, b string }{
		{"", "a\nb\n"}, {"a\nb\n", ""}, {"a\nb\nc\n", "a\nc\n"}, {"a\nb\nc\n", "x\nb\ny\n"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n", "0\n1\n2\n4\n5\n6\n7\nx\n9\n"}, {"a", "a\n"},
	}
	for _, tt := range tests {
		a, b := splitLines([]byte(tt.a)), splitLines([]byte(tt.b))
		var gotA, gotB []string
		for _, e := range lineDiff(a, b) {
			if e.op != '+' {
				gotA = append(gotA, e.line)
			}
			if e.op != '-' {
				gotB = append(gotB, e.line)
			}
		}
		if strings.Join(gotA, "") != tt.a || strings.Join(gotB, "") != tt.b {
			t.Errorf("lineDiff(%q, %q) rebuilds %q, %q", tt.a, tt.b, strings.Join(gotA, ""), strings.Join(gotB, ""))
		}
	}
}

func TestStoreNamesAndDiscard(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for _, bad := range []string{"", ".x", "a/b", "..", strings.Repeat("a", 65)} {
		if _, _, err := st.Start(bad, ws); !errors.Is(err, ErrName) {
			t.Errorf("Start(%q) = %v, want ErrName", bad, err)
		}
	}
	o, release, err := st.Start("one", ws)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Start("one", ws); !errors.Is(err, ErrInUse) {
		t.Errorf("second Start = %v, want ErrInUse", err)
	}
	if err := st.Discard("one"); !errors.Is(err, ErrInUse) {
		t.Errorf("Discard in use = %v, want ErrInUse", err)
	}
	release()
	if _, _, err := st.Start("one", t.TempDir()); !errors.Is(err, ErrWorkspace) {
		t.Errorf("Start of another workspace = %v, want ErrWorkspace", err)
	}
	// overlayfs leaves a work directory of mode 0; discard removes it.
	if err := os.Mkdir(filepath.Join(o.Work(), "work"), 0); err != nil {
		t.Fatal(err)
	}
	if err := st.Discard("one"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(st.Dir); len(ents) != 1 || ents[0].Name() != ".lock" {
		t.Errorf("discard left %v (only the store's lock file may stay)", ents)
	}
	if err := st.Discard("one"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Discard again = %v, want ErrNotFound", err)
	}
}
