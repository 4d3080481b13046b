package linux

import (
	"errors"
	"slices"
	"testing"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// TestProbeHostTranslates runs the real host probes once: whatever the
// kernel, the translation with what ProbeHost found keeps the system binds
// read-only and carries the seccomp profile.
func TestProbeHostTranslates(t *testing.T) {
	h := ProbeHost()
	if h.Submounts == nil {
		t.Fatal("ProbeHost gives no submount probe")
	}
	root := t.TempDir()
	sb := &spec.Sandbox{Root: root, System: spec.System{Kind: spec.SystemHost}, RequireOSSandbox: true}
	s, err := spec.ToOCI(sb, spec.Process{Args: []string{"true"}}, spec.RunOptions{Rootfs: t.TempDir(), Host: &h})
	if err != nil {
		if errors.Is(err, runner.ErrUnenforceable) {
			t.Skipf("this host cannot enforce the workspace sandbox: %v", err)
		}
		t.Fatal(err)
	}
	for _, m := range s.Mounts {
		if m.Type == "bind" && slices.Contains(spec.HostSystemDirs, m.Destination) && !slices.Contains(m.Options, "ro") {
			t.Errorf("system dir %s is writable", m.Destination)
		}
		if m.Type == "bind" && slices.Contains(m.Options, "ro") && slices.Contains(m.Options, "rro") != h.RecursiveReadonly {
			t.Errorf("mount %s: rro %v, but the kernel has recursive read-only binds: %v", m.Destination, !h.RecursiveReadonly, h.RecursiveReadonly)
		}
	}
	if s.Linux.Seccomp == nil {
		t.Error("no seccomp profile")
	}
}
