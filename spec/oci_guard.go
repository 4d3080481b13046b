package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// guards holds what keeps deny and protect paths in place.
type guards struct {
	// mounts are the extra mounts: ancestors bound onto themselves, and
	// /dev/null over denied files.
	mounts []specs.Mount
	// masked are the deny paths and host secrets still masked by
	// libcontainer (directories and paths that do not exist).
	masked []string
}

// guardMounts builds the mounts that keep deny and protect paths in place.
//
// A deny or protect path is enforced by a mount over it (a mask or a
// read-only rebind). The kernel refuses to rename or remove a mount point
// (EBUSY), but it renames a directory that merely contains one, and the
// mount travels with it: `mv .git x` would carry the read-only .git/config
// away and let the command put a writable one in its place. So every
// directory between a writable zone's target and a guarded path becomes a
// mount point itself, a read-write bind onto itself. A bind source is
// resolved on the host, so an ancestor that is a symlink is refused rather
// than followed.
//
// A denied file is covered by /dev/null mounted with nodev, so every open
// fails with EACCES: libcontainer's own mask of a file is a plain /dev/null
// that silently accepts writes, which tells the command its write worked.
func guardMounts(sb *Sandbox, h hostInfo) (guards, error) {
	lstat := h.lstat
	var g guards
	var problems []error
	zones := sandboxZones(sb)
	seen := map[string]bool{}
	for _, d := range sb.Deny {
		z, ok := containingZone(zones, d)
		host := hostPathIn(z, ok, d)
		if !ok && sb.System.Kind == SystemRootfs {
			// Outside every zone the sandbox shows the rootfs: a file
			// of it gets the cover too, not libcontainer's plain mask,
			// which reads as empty and takes writes.
			host = hostPathIn(zone{source: sb.System.Rootfs, target: "/"}, true, d)
		}
		fi, err := lstat(host)
		if err == nil && !fi.IsDir() {
			g.mounts = append(g.mounts, nullCover(d, h))
			continue
		}
		g.masked = append(g.masked, d)
	}
	// The host secrets of system: host get the same cover: libcontainer's
	// plain mask would let `echo x > /etc/shadow` and `cat /etc/shadow`
	// both succeed.
	for _, d := range h.secrets(sb) {
		if fi, err := lstat(d); err == nil && fi.Mode().IsRegular() {
			g.mounts = append(g.mounts, nullCover(d, h))
			continue
		}
		g.masked = append(g.masked, d)
	}
	for _, p := range append(slices.Clone(sb.Deny), sb.Protect...) {
		z, ok := containingZone(zones, p)
		if !ok || z.readonly {
			continue
		}
		var chain []string
		for a := filepath.Dir(p); a != z.target && within(a, z.target); a = filepath.Dir(a) {
			chain = append(chain, a)
		}
		slices.Reverse(chain) // outermost first, so a symlink is met before what lies behind it
		if fi, err := lstat(hostPathIn(z, true, p)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			// A mount over a symlink lands on its target (or nowhere, when
			// the target is missing), and the link itself could be replaced.
			problems = append(problems, fmt.Errorf(
				"cannot guard %s: it is a symlink, which a mount cannot cover; replace it by the file or directory it points to, "+
					"or list the target in deny/protect instead: %w", p, ErrUnenforceable))
			continue
		}
		for _, a := range chain {
			host := hostPathIn(z, true, a)
			fi, err := lstat(host)
			switch {
			case err != nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)):
				// Nothing there yet: the runner's placeholders create
				// it before the run; without them (cordon spec) it is
				// skipped.
			case err != nil:
				problems = append(problems, fmt.Errorf("guard %s: %w", p, err))
			case fi.Mode()&fs.ModeSymlink != 0:
				problems = append(problems, fmt.Errorf(
					"cannot keep %s in place: its parent %s is a symlink, and cordon does not follow symlinks when it guards deny and protect paths; "+
						"replace the symlink by the directory, or list the symlink's target in deny/protect instead: %w", p, a, ErrUnenforceable))
			case !fi.IsDir():
				// Under a file nothing can be created.
			case !seen[a]:
				seen[a] = true
				opts := []string{"rbind", "nosuid", "nodev"}
				// Under a protect path the guard must stay read-only:
				// libcontainer's read-only rebind of the protect path is
				// not recursive, so a read-write bind beneath it would
				// reopen it for writing.
				if underProtect(sb, a) {
					opts = append(opts, "ro")
					if h.recursiveRO {
						opts = append(opts, "rro")
					}
				}
				g.mounts = append(g.mounts, specs.Mount{Destination: a, Type: "bind", Source: host, Options: opts})
			}
			if err == nil && (fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir()) {
				break
			}
		}
	}
	return g, errors.Join(problems...)
}

// nullCover is the mount that hides the file at sandbox path d: /dev/null
// bound read-only with nodev, so every open of it fails (EACCES), for
// reading and for writing.
func nullCover(d string, h hostInfo) specs.Mount {
	opts := []string{"rbind", "nosuid", "nodev", "noexec", "ro"}
	if h.recursiveRO {
		opts = append(opts, "rro")
	}
	return specs.Mount{Destination: d, Type: "bind", Source: "/dev/null", Options: opts}
}

// underProtect reports whether sandbox path p is a protect path or lies
// beneath one.
func underProtect(sb *Sandbox, p string) bool {
	for _, pr := range sb.Protect {
		if within(p, pr) {
			return true
		}
	}
	return false
}

// hostPathIn maps sandbox path p inside zone z to its host path.
func hostPathIn(z zone, ok bool, p string) string {
	if !ok {
		return p
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, z.target), "/")
	return filepath.Join(z.source, rel)
}

// GuardedPaths returns the host paths a run relies on to keep deny and
// protect paths in place inside writable mounts: each such path and every
// directory between it and its mount. A runner uses it to tell which
// placeholders another concurrent run made that this run depends on too.
func GuardedPaths(sb *Sandbox) []string {
	zones := sandboxZones(sb)
	var out []string
	seen := map[string]bool{}
	for _, p := range append(slices.Clone(sb.Deny), sb.Protect...) {
		z, ok := containingZone(zones, p)
		if !ok || z.readonly || IsPattern(p) {
			continue
		}
		for a := p; a != z.target && within(a, z.target); a = filepath.Dir(a) {
			h := hostPathIn(z, true, a)
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out
}
