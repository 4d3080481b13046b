package overlay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestApplyRefusesConflict: a file the host changed since the overlay
// started, which the overlay changes too, is refused by path, and nothing
// of the overlay lands.
func TestApplyRefusesConflict(t *testing.T) {
	o := newTestOverlay(t, []string{"file a x", "file b x"}, []string{"file a overlay", "file c new"})
	host := filepath.Join(o.Workspace, "a")
	if err := os.WriteFile(host, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := o.Apply(ApplyOptions{})
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) || len(ce.Paths) != 1 || ce.Paths[0] != host {
		t.Fatalf("Apply = %v, want a conflict on %s", err, host)
	}
	if data, _ := os.ReadFile(host); string(data) != "host" {
		t.Errorf("host file = %q", data)
	}
	if _, err := os.Lstat(filepath.Join(o.Workspace, "c")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("c was applied despite the conflict: %v", err)
	}
}

// TestApplyRefusesProtected: a change to a protect path is refused
// (naming it and its rule) unless allowed; a deny path always.
func TestApplyRefusesProtected(t *testing.T) {
	for _, allow := range []bool{false, true} {
		o := newTestOverlay(t, []string{"file a x", "dir .git/hooks"}, []string{"exec .git/hooks/pre-commit #!/bin/sh", "file a y"})
		rules := RulesOf(&spec.Sandbox{Root: o.Workspace, Protect: []string{filepath.Join(o.Workspace, "**/.git/hooks")}})
		hook := filepath.Join(o.Workspace, ".git/hooks/pre-commit")
		_, err := o.Apply(ApplyOptions{Rules: rules, AllowProtected: allow})
		if allow {
			if err != nil {
				t.Fatalf("Apply with AllowProtected: %v", err)
			}
			if _, err := os.Lstat(hook); err != nil {
				t.Errorf("hook not applied: %v", err)
			}
			continue
		}
		var pe *ProtectedError
		if !errors.As(err, &pe) || !errors.Is(err, ErrProtected) || len(pe.Refused) != 1 || pe.Refused[0].Path != hook || !pe.Liftable {
			t.Fatalf("Apply = %v, want the hook refused", err)
		}
		if _, err := os.Lstat(hook); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the hook landed: %v", err)
		}
		if data, _ := os.ReadFile(filepath.Join(o.Workspace, "a")); string(data) != "x" {
			t.Errorf("a = %q: part of a refused apply landed", data)
		}
	}
	o := newTestOverlay(t, nil, []string{"file .env TOKEN"})
	rules := RulesOf(&spec.Sandbox{Root: o.Workspace, Deny: []string{filepath.Join(o.Workspace, ".env")}})
	_, err := o.Apply(ApplyOptions{Rules: rules, AllowProtected: true})
	var pe *ProtectedError
	if !errors.As(err, &pe) || pe.Liftable {
		t.Fatalf("Apply of a deny path = %v, want refused, not liftable", err)
	}
	if _, err := os.Lstat(filepath.Join(o.Workspace, ".env")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the deny path landed: %v", err)
	}
}

// TestApplyLandsAndSettles: every kind of change lands, no temporary file
// is left, and the overlay's diff is then empty.
func TestApplyLandsAndSettles(t *testing.T) {
	o := newTestOverlay(t, []string{"file a x", "file d/b y", "file gone z", "file q/a x", "file t/a x"},
		[]string{"exec a x2", "file d/c new", "whiteout gone", "symlink l a", "file n/e/w deep", "whiteout q", "file q-x y", "file t t"})
	cs, err := o.Apply(ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(cs); got != "m:a a:d/c d:gone a:l a:n a:n/e a:n/e/w d:q d:q/a a:q-x d:t a:t d:t/a" {
		t.Errorf("applied %s", got)
	}
	var left []string
	_ = filepath.Walk(o.Workspace, func(p string, _ os.FileInfo, _ error) error {
		if strings.Contains(filepath.Base(p), ".cordon-apply-") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if fi, err := os.Stat(filepath.Join(o.Workspace, "a")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("a: %v %v", fi, err)
	}
	if cs, _ := o.Changes(); len(cs) != 0 {
		t.Errorf("after apply, changes = %s", summary(cs))
	}
	// Applying again lands nothing and conflicts with nothing.
	if cs, err := o.Apply(ApplyOptions{}); err != nil || len(cs) != 0 {
		t.Errorf("second apply = %s, %v", summary(cs), err)
	}
}

// TestApplyNotThroughHostSymlink: a host directory replaced by a symlink
// after the overlay started is not written through.
func TestApplyNotThroughHostSymlink(t *testing.T) {
	o := newTestOverlay(t, []string{"dir d"}, []string{"file d/x new"})
	outside := t.TempDir()
	if err := os.Remove(filepath.Join(o.Workspace, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(o.Workspace, "d")); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Apply(ApplyOptions{}); err == nil {
		t.Fatal("Apply wrote through a host symlink")
	}
	if _, err := os.Lstat(filepath.Join(outside, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("x landed outside the workspace: %v", err)
	}
}

// TestApplyRefusesRepositoryShapes: the repository rules of
// mounts/decide hold at apply: a bare repository shape made in the
// overlay, and a .git file leading git to an unguarded directory, are
// refused by path; nothing lands.
func TestApplyRefusesRepositoryShapes(t *testing.T) {
	tests := []struct {
		name  string
		upper []string
		path  string
	}{
		{"bare shape", []string{"file evil/HEAD ref: refs/heads/main\\n", "dir evil/objects", "dir evil/refs", "file evil/config [core]\\n\\tfsmonitor = touch /tmp/x\\n"}, "evil"},
		{"gitdir redirect", []string{"file sub/.git gitdir: /tmp/elsewhere\\n"}, "sub/.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newTestOverlay(t, []string{"file a x"}, append(tt.upper, "file a y"))
			_, err := o.Apply(ApplyOptions{})
			var pe *ProtectedError
			want := filepath.Join(o.Workspace, tt.path)
			if !errors.As(err, &pe) || len(pe.Refused) != 1 || pe.Refused[0].Path != want {
				t.Fatalf("Apply = %v, want %s refused", err, want)
			}
			if _, err := os.Lstat(want); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s landed: %v", want, err)
			}
			if data, _ := os.ReadFile(filepath.Join(o.Workspace, "a")); string(data) != "x" {
				t.Errorf("a = %q", data)
			}
		})
	}
}

// TestApplyManyFilesInParallel: files staged on several threads (more
// than one worker's share) all land whole, with their modes, and no
// temporary file is left.
func TestApplyManyFilesInParallel(t *testing.T) {
	var upper []string
	for i := range 400 {
		kind := "file"
		if i%7 == 0 {
			kind = "exec"
		}
		upper = append(upper, fmt.Sprintf("%s d%d/f%03d content %d", kind, i%5, i, i))
	}
	o := newTestOverlay(t, []string{"file d0/f000 old"}, upper)
	cs, err := o.Apply(ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 404 { // 4 new directories, 399 new files, 1 modified
		t.Errorf("applied %d changes, want 404", len(cs))
	}
	for i := range 400 {
		p := filepath.Join(o.Workspace, fmt.Sprintf("d%d/f%03d", i%5, i))
		data, err := os.ReadFile(p)
		fi, serr := os.Stat(p)
		want := os.FileMode(0o644)
		if i%7 == 0 {
			want = 0o755
		}
		if err != nil || serr != nil || string(data) != fmt.Sprintf("content %d", i) || fi.Mode().Perm() != want {
			t.Fatalf("%s: %q %v %v", p, data, err, fi)
		}
	}
	ents, _ := filepath.Glob(filepath.Join(o.Workspace, "*", ".cordon-apply-*"))
	if len(ents) > 0 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// TestApplyNeverReplacesHostFileMadeMeanwhile: a file the host makes
// after the conflict check, at a path the overlay adds, is not replaced:
// the landing stops with a conflict naming it and the host's bytes stay.
func TestApplyNeverReplacesHostFileMadeMeanwhile(t *testing.T) {
	o := newTestOverlay(t, []string{"dir d"}, []string{"file d/new overlay"})
	changes, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApplier(o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	host := filepath.Join(o.Workspace, "d/new")
	for _, c := range changes {
		if c.Path == "d/new" {
			if _, err := a.dir("d"); err != nil {
				t.Fatal(err)
			}
			if _, err := a.upperDir("d"); err != nil {
				t.Fatal(err)
			}
			if err := a.stageAll([]Change{c}); err != nil {
				t.Fatal(err)
			}
			if err := a.sync(); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if err := os.WriteFile(host, []byte("host"), 0o644); err != nil {
				t.Fatal(err)
			}
			byDest := map[string]temp{a.temps[0].dest: a.temps[0]}
			err := a.land(c, byDest)
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), host) {
				t.Fatalf("land = %v, want a conflict naming %s", err, host)
			}
		}
	}
	if data, _ := os.ReadFile(host); string(data) != "host" {
		t.Errorf("host file = %q, want the host's bytes", data)
	}
}

// TestApplyNewDirectoryLandsWhole: a directory the host lacks is filled
// under a temporary name and renamed into place whole: while its files
// are written nothing of it is at its name, and an apply that stops
// before it lands leaves nothing of it behind.
func TestApplyNewDirectoryLandsWhole(t *testing.T) {
	o := newTestOverlay(t, []string{"file a x"}, []string{"file n/e/w deep", "file n/top t", "symlink n/l top"})
	changes, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApplier(o)
	if err != nil {
		t.Fatal(err)
	}
	var files []Change
	for _, c := range changes {
		if !c.Dir() {
			parent, _ := split(c.Path)
			if _, err := a.dir(parent); err != nil {
				t.Fatal(err)
			}
			if _, err := a.upperDir(parent); err != nil {
				t.Fatal(err)
			}
			files = append(files, c)
		}
	}
	if err := a.stageAll(files); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(o.Workspace, "n")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("n is at its name before it landed: %v", err)
	}
	staged, _ := filepath.Glob(filepath.Join(o.Workspace, ".cordon-apply-*"))
	if len(staged) != 1 {
		t.Errorf("staged = %v, want one temporary directory", staged)
	}
	a.close()
	if ents, _ := os.ReadDir(o.Workspace); len(ents) != 1 || ents[0].Name() != "a" {
		t.Errorf("after an apply that stopped, the workspace holds %v, want only a", ents)
	}
	// The whole apply lands it, with a link and the file it names.
	if _, err := o.Apply(ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(o.Workspace, "n/l")); err != nil || string(data) != "t" {
		t.Errorf("n/l = %q, %v", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(o.Workspace, "n/e/w")); err != nil || string(data) != "deep" {
		t.Errorf("n/e/w = %q, %v", data, err)
	}
}

// TestApplyFileBecomesDirectory: a host file (or symlink) the overlay
// replaces with a directory holding files is removed and the directory
// lands in its place; nothing is written through the symlink.
func TestApplyFileBecomesDirectory(t *testing.T) {
	outside := t.TempDir()
	o := newTestOverlay(t, []string{"file f x", "symlink s " + outside}, []string{"file f/in f-new", "file s/in s-new"})
	if _, err := o.Apply(ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"f", "s"} {
		fi, err := os.Lstat(filepath.Join(o.Workspace, d))
		if err != nil || !fi.IsDir() {
			t.Fatalf("%s: %v %v, want a directory", d, fi, err)
		}
		if data, _ := os.ReadFile(filepath.Join(o.Workspace, d, "in")); string(data) != d+"-new" {
			t.Errorf("%s/in = %q", d, data)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written through the host symlink: %v", ents)
	}
}
