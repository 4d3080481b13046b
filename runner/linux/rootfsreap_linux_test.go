package linux

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRootfsKeyLayouts(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	layout := func(src, dst, cwd string) *specs.Spec {
		return &specs.Spec{
			Root:    &specs.Root{Readonly: true},
			Process: &specs.Process{Cwd: cwd},
			Mounts:  []specs.Mount{{Destination: "/proc", Type: "proc"}, {Destination: dst, Source: src, Type: "bind", Options: []string{"rbind"}}},
		}
	}
	base := rootfsKey(layout(dir, "/w", "/w"))
	for _, tc := range []struct {
		name string
		oci  *specs.Spec
		same bool
	}{
		{"same layout", layout(dir, "/w", "/w"), true},
		{"another source of the same type", layout(t.TempDir(), "/w", "/w"), true},
		{"another destination", layout(dir, "/v", "/w"), false},
		{"a file source, where a dir was", layout(file, "/w", "/w"), false},
		{"another working directory", layout(dir, "/w", "/x"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rootfsKey(tc.oci) == base; got != tc.same {
				t.Fatalf("same key: %v, want %v", got, tc.same)
			}
		})
	}
}

// TestReapRootsSparesHeldSkeleton: an old skeleton is removed only when no
// run holds it, and never when it holds anything but empty mount points.
func TestReapRootsSparesHeldSkeleton(t *testing.T) {
	st, err := openStateDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	oci := &specs.Spec{Root: &specs.Root{Readonly: true}, Mounts: []specs.Mount{{Destination: "/usr", Type: "tmpfs"}}}
	sr, err := st.sharedRootfs(oci)
	if err != nil {
		t.Fatal(err)
	}
	if !sr.making || oci.Root.Path != filepath.Join(sr.dir, "rootfs") {
		t.Fatalf("first hold: making %v, root %s", sr.making, oci.Root.Path)
	}
	if err := os.Mkdir(filepath.Join(oci.Root.Path, "usr"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sr.publish(); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * rootsUnusedAfter)
	if err := os.Chtimes(filepath.Join(sr.dir, "ready"), old, old); err != nil {
		t.Fatal(err)
	}
	st.reapRoots()
	if _, err := os.Stat(filepath.Join(oci.Root.Path, "usr")); err != nil {
		t.Fatalf("a held skeleton was removed: %v", err)
	}
	second, err := st.sharedRootfs(&specs.Spec{Root: &specs.Root{Readonly: true}, Mounts: oci.Mounts})
	if err != nil || second.making || second.dir != sr.dir {
		t.Fatalf("second hold of the ready skeleton: %+v %v", second, err)
	}
	second.release()
	// The second hold renewed the ready mark; age it again.
	if err := os.Chtimes(filepath.Join(sr.dir, "ready"), old, old); err != nil {
		t.Fatal(err)
	}
	// A file with content is not a mount point: left in place.
	junk := filepath.Join(oci.Root.Path, "usr", "junk")
	if err := os.WriteFile(junk, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	sr.release()
	st.reapRoots()
	if _, err := os.Stat(junk); err != nil {
		t.Fatalf("a skeleton holding a file was emptied: %v", err)
	}
	if err := os.Remove(junk); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(sr.dir, "lock"), old, old); err != nil {
		t.Fatal(err)
	}
	st.reapRoots()
	if _, err := os.Stat(sr.dir); !os.IsNotExist(err) {
		left, _ := os.ReadDir(sr.dir)
		t.Fatalf("an old, unheld skeleton was kept: %v %v", err, left)
	}
}
