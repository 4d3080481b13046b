package spec

import (
	"slices"
	"testing"
)

// TestOverlayMount: the workspace of an overlay sandbox is an overlayfs
// mount of the layers (userxattr rootless, no redirects either way), in
// place of its bind mount, and the mount list has no other mount of it.
func TestOverlayMount(t *testing.T) {
	for _, rootless := range []bool{false, true} {
		sb := &Sandbox{Root: "/ws", Overlay: &Overlay{Name: "o", Upper: "/s/o/upper", Work: "/s/o/work"}, System: System{Kind: SystemHost}}
		ms, err := sandboxMounts(sb, rootless, currentHost(&Host{RecursiveReadonly: true}))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range ms {
			if m.Destination != "/ws" {
				continue
			}
			n++
			if m.Type != "overlay" || !slices.Contains(m.Options, "lowerdir=/ws") || !slices.Contains(m.Options, "upperdir=/s/o/upper") ||
				!slices.Contains(m.Options, "workdir=/s/o/work") || slices.Contains(m.Options, "rbind") {
				t.Errorf("rootless=%v: workspace mount %+v", rootless, m)
			}
			if slices.Contains(m.Options, "userxattr") != rootless || slices.Contains(m.Options, "redirect_dir=off") == rootless {
				t.Errorf("rootless=%v: options %v", rootless, m.Options)
			}
		}
		if n != 1 {
			t.Errorf("rootless=%v: %d mounts of the workspace, want 1", rootless, n)
		}
	}
}

// TestOverlayUnbrokered: only an overlay sandbox with no writable extra
// mount and no strict_deny leaves its path calls to the kernel.
func TestOverlayUnbrokered(t *testing.T) {
	ov := &Overlay{Name: "o", Upper: "/s/u", Work: "/s/w"}
	tests := []struct {
		name string
		sb   *Sandbox
		want bool
	}{
		{"direct", &Sandbox{Root: "/ws"}, false},
		{"overlay", &Sandbox{Root: "/ws", Overlay: ov}, true},
		{"read-only mount", &Sandbox{Root: "/ws", Overlay: ov, Mounts: []Mount{{Source: "/d", Readonly: true}}}, true},
		{"writable mount", &Sandbox{Root: "/ws", Overlay: ov, Mounts: []Mount{{Source: "/d"}}}, false},
		{"strict_deny", &Sandbox{Root: "/ws", Overlay: ov, StrictDeny: true}, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := OverlayUnbrokered(tt.sb); got != tt.want {
			t.Errorf("%s: OverlayUnbrokered = %v, want %v", tt.name, got, tt.want)
		}
	}
}
