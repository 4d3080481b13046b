package ociruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/cyphar/filepath-securejoin/pathrs-lite"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// applyAnnotations reads the bundle's run.cordon.* annotations and adds
// the mounts they ask to s; a bundle without them is left as it is. The
// broker (broker_linux.go) decides the rest: a protected path missing
// from the image stays missing, and the broker refuses its creation.
func applyAnnotations(s *specs.Spec) (Boundary, error) {
	if s.Root == nil || s.Root.Path == "" {
		return Boundary{}, errors.New("root.path must be set in the bundle's spec")
	}
	rootfs, err := filepath.Abs(s.Root.Path)
	if err != nil {
		return Boundary{}, err
	}
	b, err := ParseBoundary(s.Annotations, rootfs)
	if err != nil {
		return Boundary{}, err
	}
	if b.Empty() {
		return b, nil
	}
	if err := refuseUnenforced(b, s); err != nil {
		return Boundary{}, err
	}
	for _, p := range b.Deny {
		m, err := denyMount(rootfs, p)
		if err != nil {
			return Boundary{}, err
		}
		s.Mounts = append(s.Mounts, m)
	}
	for _, p := range b.Protect {
		_, exists, err := kindInRoot(rootfs, p)
		if err != nil {
			return Boundary{}, err
		}
		if !exists {
			continue
		}
		// libcontainer binds a read-only path onto itself after every
		// mount, so it also covers a path inside a volume: a second
		// layer under the broker's decision.
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		s.Linux.ReadonlyPaths = append(s.Linux.ReadonlyPaths, p)
	}
	logrus.WithFields(logrus.Fields{"deny": b.Deny, "protect": b.Protect}).Debug("cordon boundary applied")
	return b, nil
}

// refuseUnenforced fails closed on what this mode does not enforce: an
// allow list on a network the guard cannot stand in front of, and any
// boundary in a container whose capabilities could undo it
// (boundaryBreakingCaps).
func refuseUnenforced(b Boundary, s *specs.Spec) error {
	var errs []error
	if len(b.Allow) > 0 {
		if err := checkNetwork(s); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range boundaryBreakingCaps(s) {
		errs = append(errs, &AnnotationError{Annotation: annotationPrefix + "*", Problem: "the container has " + c.name + ", with which it could " + c.why,
			Fix: "drop " + c.name + " (do not run it privileged), or leave the run.cordon annotations out"})
	}
	return errors.Join(errs...)
}

// breakingCap is a capability with which a container's own processes
// could step around the broker and the mounts that hold its boundary.
type breakingCap struct{ name, why string }

// boundaryBreakingCaps lists the capabilities in s's bounding set that
// would undo cordon's boundary: unmounting what deny and protect mount
// (CAP_SYS_ADMIN), loading kernel code (CAP_SYS_MODULE), raw device and
// port access (CAP_SYS_RAWIO), and, with the host's PID namespace, tracing
// host processes (CAP_SYS_PTRACE).
func boundaryBreakingCaps(s *specs.Spec) []breakingCap {
	p := s.Process
	if p == nil || p.Capabilities == nil {
		return nil
	}
	caps := []breakingCap{
		{"CAP_SYS_ADMIN", "unmount what deny and protect mount"},
		{"CAP_SYS_MODULE", "load kernel code, which no sandbox holds"},
		{"CAP_SYS_RAWIO", "write block devices and I/O ports under every file system rule"},
	}
	if !hasNamespace(s, specs.PIDNamespace) {
		caps = append(caps, breakingCap{"CAP_SYS_PTRACE", "trace the host's processes (it shares the host's PID namespace)"})
	}
	var out []breakingCap
	for _, c := range caps {
		if slices.Contains(p.Capabilities.Bounding, c.name) {
			out = append(out, c)
		}
	}
	return out
}

// hasNamespace reports whether s asks for a new namespace of type t (or
// joins one by path: not the runtime's own either way).
func hasNamespace(s *specs.Spec, t specs.LinuxNamespaceType) bool {
	if s.Linux == nil {
		return false
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == t {
			return true
		}
	}
	return false
}

// kindInRoot resolves p inside rootfs as the container will (symlinks
// stay inside it) and says whether it is a directory and whether it exists.
func kindInRoot(rootfs, p string) (isDir, exists bool, err error) {
	f, err := pathrs.OpenInRoot(rootfs, p)
	if errors.Is(err, os.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("resolve %s in the container's root %s: %w", p, rootfs, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false, false, fmt.Errorf("stat %s in the container's root: %w", p, err)
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR, true, nil
}

// denyMount hides p: a directory (or a missing path) under an empty
// read-only tmpfs, a file under /dev/null mounted nodev, whose every open
// fails with EACCES.
func denyMount(rootfs, p string) (specs.Mount, error) {
	isDir, exists, err := kindInRoot(rootfs, p)
	if err != nil {
		return specs.Mount{}, err
	}
	if isDir || !exists {
		return placeholderDir(p), nil
	}
	return specs.Mount{Destination: p, Type: "bind", Source: "/dev/null",
		Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}}, nil
}

// placeholderDir is an empty, read-only, unlistable directory at p.
func placeholderDir(p string) specs.Mount {
	return specs.Mount{Destination: p, Type: "tmpfs", Source: "tmpfs",
		Options: []string{"ro", "nosuid", "nodev", "noexec", "mode=000", "size=4k"}}
}
