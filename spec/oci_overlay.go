package spec

import specs "github.com/opencontainers/runtime-spec/specs-go"

// overlayMount is the workspace mounted copy-on-write: the host workspace
// is the lower layer (overlayfs never writes it), the overlay's upper
// layer takes every write. Redirects, metacopy and index stay off so
// that the upper layer holds whole files and whiteouts only, which is what
// internal/overlay reads to diff and apply. A rootless run keeps overlay's
// own attributes in user.overlay.* (userxattr): trusted.* is the init
// namespace's.
func overlayMount(sb *Sandbox, rootless bool) specs.Mount {
	opts := []string{"lowerdir=" + sb.Root, "upperdir=" + sb.Overlay.Upper, "workdir=" + sb.Overlay.Work,
		"index=off", "metacopy=off", "nosuid", "nodev"}
	if rootless {
		// userxattr creates no redirects already, and refuses the option.
		opts = append(opts, "userxattr")
	} else {
		opts = append(opts, "redirect_dir=off")
	}
	return specs.Mount{Destination: sb.Root, Type: "overlay", Source: "overlay", Options: opts}
}

// OverlayUnbrokered reports whether sb is an overlay sandbox whose
// writes can reach no host file but through its upper layer: no extra
// mount is writable (but cordon's own caches, Mount.Cache: the host runs
// nothing from them) and strict_deny is off. Its path calls then need no
// broker (the deny and protect entries inside the workspace hold at
// apply; the runner's deny mounts still hide what exists), so they stay
// in the kernel, at the speed of a plain bind mount.
func OverlayUnbrokered(sb *Sandbox) bool {
	if sb == nil || sb.Overlay == nil || sb.Root == "" || sb.StrictDeny {
		return false
	}
	for _, m := range sb.Mounts {
		if !m.Readonly && !m.Cache {
			return false
		}
	}
	return true
}
