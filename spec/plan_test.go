package spec

import (
	"reflect"
	"slices"
	"testing"
)

// TestNewPlan: one call gives the spec, the guarded paths and what is not
// enforced; a deny or protect path missing at start is not pretended into
// existence (the runner creates nothing on the host for it: its broker
// refuses creating it), so nothing is mounted at it or at its missing
// parents.
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
	if !reflect.DeepEqual(p.Guarded, GuardedPaths(sb)) || !slices.Contains(p.Guarded, ociWS+"/a/b") {
		t.Errorf("guarded = %v", p.Guarded)
	}
	if !slices.Equal(p.Unenforced, []string{"limits"}) {
		t.Errorf("unenforced = %v", p.Unenforced)
	}
	want := mustOCI(t, sb, ociProc(), ro, h)
	if !reflect.DeepEqual(p.Spec.Mounts, want.Mounts) || !reflect.DeepEqual(p.Spec.Linux.MaskedPaths, want.Linux.MaskedPaths) {
		t.Errorf("plan mounts %v\nmasks %v\nwant mounts %v\nmasks %v", p.Spec.Mounts, p.Spec.Linux.MaskedPaths, want.Mounts, want.Linux.MaskedPaths)
	}
	for _, missing := range []string{ociWS + "/a", ociWS + "/a/b", ociWS + "/a/b/c"} {
		if _, ok := ociMountAt(p.Spec, missing); ok {
			t.Errorf("a mount at the missing %s", missing)
		}
	}
	if _, err := NewPlan(nil, ociProc(), ociRun()); err == nil {
		t.Error("a nil sandbox was planned")
	}
}
