package spec

import (
	"errors"
	"io/fs"
	"reflect"
	"slices"
	"testing"
)

// TestNewPlan: one call gives the spec, the placeholders, the guarded paths
// and what is not enforced, and the spec is the one the translation gives
// once the placeholders exist: the guards of the directories the runner
// will create are in it already.
func TestNewPlan(t *testing.T) {
	sb := ociWorkspace()
	sb.Protect = []string{ociWS + "/.git/hooks", ociWS + "/a/b/c"}
	sb.Deny = []string{ociWS + "/.env", ociWS + "/a/secret"}
	ro := ociRun()
	ro.Unenforced = []string{"limits"}
	h := ociGoldenHost()
	p, err := newPlan(sb, ociProc(), ro, h)
	if err != nil {
		t.Fatal(err)
	}
	wantPh := []Placeholder{{Zone: ociWS, Rel: "a/secret"}, {Zone: ociWS, Rel: ".git/hooks"}, {Zone: ociWS, Rel: "a/b/c"}}
	if !reflect.DeepEqual(p.Placeholders, wantPh) {
		t.Errorf("placeholders = %+v, want %+v", p.Placeholders, wantPh)
	}
	if !reflect.DeepEqual(p.Guarded, GuardedPaths(sb)) || !slices.Contains(p.Guarded, ociWS+"/a/b") {
		t.Errorf("guarded = %v", p.Guarded)
	}
	if !slices.Equal(p.Unenforced, []string{"limits"}) {
		t.Errorf("unenforced = %v", p.Unenforced)
	}

	// The host after the runner made the placeholders.
	made := map[string]bool{ociWS + "/a": true, ociWS + "/a/b": true, ociWS + "/a/b/c": true, ociWS + "/a/secret": true, ociWS + "/.git/hooks": true}
	after := h
	after.lstat = func(p string) (fs.FileInfo, error) {
		if made[p] {
			return fakeInfo{name: p, mode: fs.ModeDir | 0o755}, nil
		}
		return goldenLstat(p)
	}
	want := mustOCI(t, sb, ociProc(), ro, after)
	if !reflect.DeepEqual(p.Spec.Mounts, want.Mounts) || !reflect.DeepEqual(p.Spec.Linux.MaskedPaths, want.Linux.MaskedPaths) {
		t.Errorf("plan mounts %v\nmasks %v\nwant mounts %v\nmasks %v", p.Spec.Mounts, p.Spec.Linux.MaskedPaths, want.Mounts, want.Linux.MaskedPaths)
	}
	if _, ok := ociMountAt(p.Spec, ociWS+"/a/b"); !ok {
		t.Error("the placeholder parent a/b is not kept in place")
	}
	// Without the plan, a missing parent has no guard (cordon spec's old
	// output): the plan is what the run builds.
	if s := mustOCI(t, sb, ociProc(), ro, h); reflect.DeepEqual(s.Mounts, p.Spec.Mounts) {
		t.Error("the plan did not account for the placeholders")
	}
}

// TestNewPlanOverlayOnlyMissing: the plan pretends only missing
// placeholder paths exist; any other answer of the host stands (a file in
// the way stays a file, and the run then fails to make its placeholder).
func TestNewPlanOverlayOnlyMissing(t *testing.T) {
	lstat := withPlaceholders(goldenLstat, []Placeholder{{Zone: ociWS, Rel: ".env/x"}, {Zone: ociWS, Rel: "n/m"}})
	if fi, err := lstat(ociWS + "/.env"); err != nil || fi.IsDir() {
		t.Errorf(".env: %v %v, want the file it is", fi, err)
	}
	if fi, err := lstat(ociWS + "/n"); err != nil || !fi.IsDir() {
		t.Errorf("n: %v %v, want a directory to be", fi, err)
	}
	if _, err := lstat(ociWS + "/other"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("other: %v, want not found", err)
	}
	if _, err := NewPlan(nil, ociProc(), ociRun()); err == nil {
		t.Error("a nil sandbox was planned")
	}
}
