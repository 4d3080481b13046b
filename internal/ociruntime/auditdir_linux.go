package ociruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/userns"
	"golang.org/x/sys/unix"
)

// run.cordon.audit is written by whoever writes the bundle's annotations
// (a pod's author, when containerd lets pod annotations through), not by
// the runtime's owner, and the runtime (root on a node) appends to it a
// start record that carries the container's command. So the log must lie
// below the audit folder the runtime's owner chose (--audit-dir), as the
// kernel resolves the path: no ".." out of it, no symbolic link on the
// way (TestOCIAuditPathRefused). Without this rule a `$(...)` in the
// command, appended to /root/.bashrc, runs as root at the next login.

// defaultAuditDir is --audit-dir's default: /var/log/cordon-oci for root,
// else $XDG_STATE_HOME/cordon-oci ($HOME/.local/state/cordon-oci); rootless
// podman runs its runtime as root of a user namespace, which is a user too.
func defaultAuditDir() string {
	if os.Geteuid() == 0 && !userns.RunningInUserNS() {
		return "/var/log/cordon-oci"
	}
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "cordon-oci")
	}
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "cordon-oci")
	}
	return "/var/log/cordon-oci"
}

// errAuditOutside is wrapped by the refusal of an audit log outside the
// audit folder.
var errAuditOutside = errors.New("the audit log is outside the runtime's audit folder")

// checkAuditPath refuses p (the run.cordon.audit annotation) unless it
// names a file below dir (--audit-dir, made 0700 when missing) through
// folders the kernel resolves beneath dir with no symbolic link. The
// file itself is opened later without following a link (hostfile.Open).
func checkAuditPath(dir, p string) error {
	fix := fmt.Sprintf("give a file below the runtime's audit folder, with no \"..\" or symbolic link on the way: %s/NAME.jsonl (the runtime's owner chooses that folder with cordon-oci's --audit-dir)", dir)
	refuse := func(problem string, err error) error {
		return &AnnotationError{Annotation: AnnotationAudit, Problem: problem, Fix: fix, Err: err}
	}
	rel, below := strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/")
	if !below {
		return refuse(fmt.Sprintf("%q is not below the runtime's audit folder %s", p, dir), errAuditOutside)
	}
	parent, name := filepath.Split(rel) // as written: the kernel resolves it below
	if name == "" || name == "." || name == ".." {
		return refuse(fmt.Sprintf("%q names no file", p), errAuditOutside)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return refuse(fmt.Sprintf("the audit log cannot be written: its folder %s cannot be made: %v", dir, err), err)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return refuse(fmt.Sprintf("the audit log cannot be written: open its folder %s: %v", dir, err), err)
	}
	defer unix.Close(dfd)
	if parent == "" {
		return nil
	}
	fd, err := unix.Openat2(dfd, parent, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	switch {
	case err == nil:
		unix.Close(fd)
		return nil
	case errors.Is(err, unix.EXDEV):
		return refuse(fmt.Sprintf("%q leaves the runtime's audit folder %s", p, dir), errors.Join(errAuditOutside, err))
	case errors.Is(err, unix.ELOOP):
		return refuse(fmt.Sprintf("%q goes through a symbolic link below the runtime's audit folder %s", p, dir), errors.Join(errAuditOutside, err))
	}
	return refuse(fmt.Sprintf("the audit log cannot be written: its folder %s%s: %v", dir, "/"+strings.TrimSuffix(parent, "/"), err), err)
}
