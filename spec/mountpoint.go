package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MountPointProblem says why mount i of sb can never be mounted, or returns
// "" and "": its target lies inside a directory that is read-only in the
// sandbox (a `system: host` directory such as /etc, the rootfs, or a
// read-only mount or workspace) and does not exist there as the kind of
// file its source is, so no mount point can be made for it (every run would
// fail with EROFS from mkdirat). The loader (sandbox.mounts[i].target), the
// mount table every front end builds (mounts.New: cordon check, explain,
// the file tools) and so every run ask this one function, so they agree.
func MountPointProblem(sb *Sandbox, i int) (problem, fix string) {
	m := sb.Mounts[i]
	t := m.Target
	if t == "" {
		t = m.Source
	}
	if t == "" || !filepath.IsAbs(t) {
		return "", ""
	}
	type dir struct {
		source, target, what string
		readonly             bool
	}
	var dirs []dir
	if sb.Root != "" {
		dirs = append(dirs, dir{sb.Root, sb.Root, "the workspace", sb.Readonly})
	}
	for j, o := range sb.Mounts {
		ot := o.Target
		if ot == "" {
			ot = o.Source
		}
		if j != i {
			dirs = append(dirs, dir{o.Source, ot, fmt.Sprintf("sandbox.mounts[%d]", j), o.Readonly})
		}
	}
	for _, d := range SystemDirs(sb) {
		dirs = append(dirs, dir{d, d, "the system directory " + d + " (system: host)", true})
	}
	if sb.System.Kind == SystemRootfs {
		dirs = append(dirs, dir{sb.System.Rootfs, "/", "the rootfs " + sb.System.Rootfs, true})
	}
	var in dir
	found := false
	for _, d := range dirs {
		if t != d.target && within(t, d.target) && (!found || len(d.target) > len(in.target)) {
			in, found = d, true
		}
	}
	if !found || !in.readonly {
		return "", ""
	}
	host := filepath.Join(in.source, strings.TrimPrefix(t, in.target))
	fix = fmt.Sprintf("choose a target outside the sandbox's read-only directories (for example /mnt/%s), or create %s on the host first",
		filepath.Base(t), host)
	fi, err := os.Lstat(host)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid):
		return fmt.Sprintf("%s is inside %s, which is read-only in the sandbox, and %s does not exist, so the mount point cannot be made", t, in.what, host), fix
	case err != nil:
		return fmt.Sprintf("%s is inside %s, which is read-only in the sandbox, and %s cannot be checked: %v", t, in.what, host, err), fix
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Sprintf("%s is inside %s, which is read-only in the sandbox, and %s is a symbolic link", t, in.what, host),
			"choose a target outside the sandbox's read-only directories, or the path the link points to"
	}
	sfi, err := os.Stat(m.Source)
	if err == nil && sfi.IsDir() != fi.IsDir() {
		kind := map[bool]string{true: "a directory", false: "a file"}
		return fmt.Sprintf("%s is inside %s, which is read-only in the sandbox, and %s is %s while the source %s is %s",
			t, in.what, host, kind[fi.IsDir()], m.Source, kind[sfi.IsDir()]), fix
	}
	return "", ""
}
