package linux

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/hostfile"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// BundleOCIVersion is the runtime-spec version a bundle declares: the
// newest that stock runc (1.1) and crun (1.8, which refuses 1.2 and
// later) of Debian 12 both accept; the bundle uses nothing newer.
const BundleOCIVersion = "1.0.2"

// AnnotationOnlyCordon lists, in a bundle's config.json, what of the
// sandbox only `cordon run` enforces: an OCI runtime has no way to.
const AnnotationOnlyCordon = spec.AnnotationPrefix + "only-cordon-run"

// onlyCordonRun are the parts of every sandbox that no OCI runtime can
// carry, each as one sentence.
var onlyCordonRun = []string{
	"typed results (failure_type, blocked_path, signal, limits typed from the kernel's counters) and the audit log",
	"cordon's PID 1: the sandbox ends when its caller dies, and orphans are reaped",
	"limits.timeout and limits.output",
	"a second ^C killing the sandbox",
	"the loader variables (LD_*) kept from PID 1",
}

// Bundle is what WriteBundle wrote.
type Bundle struct {
	// Dir is the bundle directory: config.json and rootfs.
	Dir string
	// Unguarded are the deny and protect paths missing at export, in
	// writable zones: a stock runtime cannot cover them without making
	// them on the host, so the bundle leaves them out (cordon run's broker
	// refuses creating them).
	Unguarded []string
	// OnlyCordon lists what only `cordon run` enforces (also in the
	// config's AnnotationOnlyCordon annotation).
	OnlyCordon []string
}

// WriteBundle writes an OCI bundle in dir (which must be empty or absent)
// that runs args in sandbox sb under a stock runtime (runc, crun): the
// plan this user's `cordon run` would use (rootless: its user namespace,
// which rootless runc needs), with its rootfs skeleton, an
// ociVersion those runtimes take, no cgroups path of cordon's own (the
// runtime names the cgroup after the container), plain read-only binds
// for files (crun refuses "rro" on a file), and nothing written outside
// dir: the missing deny and protect paths are listed (Unguarded).
func WriteBundle(dir string, sb *spec.Sandbox, args []string) (b *Bundle, err error) {
	made, err := emptyDir(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		// A bundle that could not be written leaves nothing: what this
		// call made (dir and the parents it had to make) goes again.
		if err != nil && made != "" {
			err = errors.Join(err, os.RemoveAll(made))
		}
	}()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	rootfs := filepath.Join(abs, "rootfs")
	cwd := "/"
	if sb.Root != "" {
		cwd = sb.Root
	}
	// A rootless caller's bundle is for rootless runc: a user namespace
	// that maps the caller's ids, as a rootless cordon run has.
	be := runner.LocalBackend()
	facts := Facts()
	ro := runner.RunOptions(be, "bundle", rootfs, facts)
	ro.CgroupsPath = ""
	ro.NetworkGuarded = false
	// A stock runtime has no broker, and a mount over a missing path
	// would make it on the host: the missing deny and protect paths are
	// left out and listed instead. A bundle never changes the workspace
	// (placeholder directories named .git/commondir broke git there).
	p, enf, err := runner.Plan(be, sb, runner.Process(args, cwd, false), ro, facts)
	if err != nil {
		return nil, err
	}
	b = &Bundle{Dir: abs, OnlyCordon: slices.Clone(onlyCordonRun)}
	for _, u := range enf.UnenforcedDetails() {
		b.OnlyCordon = append(b.OnlyCordon, "not enforced by cordon either: "+u)
	}
	if sb.StrictDeny {
		b.OnlyCordon = append(b.OnlyCordon, "strict_deny: a denied path the host creates or renames mid-run is readable under a stock runtime (cordon's broker decides every open)")
	}
	if len(sb.Network.Allow) > 0 {
		b.OnlyCordon = append(b.OnlyCordon, "the network allow list: the bundle has loopback only")
	}
	for _, ph := range spec.MissingGuarded(p.Aliased) {
		b.Unguarded = append(b.Unguarded, ph.Path())
	}
	if len(b.Unguarded) > 0 {
		b.OnlyCordon = append(b.OnlyCordon, "the deny and protect paths missing at export ("+strings.Join(b.Unguarded, " ")+
			"): a stock runtime can only cover what exists, and cordon run's broker refuses creating them")
	}
	s := p.Spec
	s.Version = BundleOCIVersion
	s.Root = &specs.Root{Path: "rootfs", Readonly: true}
	if s.Linux != nil {
		s.Linux.CgroupsPath = ""
	}
	if err := bundleMounts(s, rootfs); err != nil {
		return nil, err
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	only, _ := json.Marshal(b.OnlyCordon)
	s.Annotations[AnnotationOnlyCordon] = string(only)
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	// As every file cordon writes for its caller: never through a link
	// or into a FIFO a sandbox could have left in the bundle's folder.
	f, err := hostfile.Open(filepath.Join(abs, "config.json"), false, 0o644)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(append(data, '\n'))
	return b, errors.Join(err, f.Close())
}

// bundleMounts makes each mount point in the rootfs skeleton (a directory,
// or an empty file for a file bind) and turns "rro" into "ro" on file
// binds, where recursion means nothing and crun refuses it.
//
// The bundle may lie in a folder a sandbox can write, so nothing is
// created through a link: rootfs is made here and must not be one, and
// every mount point is made inside it with pathrs-lite, which resolves a
// link planted in the skeleton inside rootfs, never on the host.
func bundleMounts(s *specs.Spec, rootfs string) error {
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		return err
	}
	root, err := os.OpenFile(rootfs, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bundle rootfs %s: %w", rootfs, err)
	}
	defer root.Close()
	mkdir := func(p string) (*os.File, error) {
		return pathrs.MkdirAllHandle(root, strings.TrimPrefix(p, rootfs), 0o755)
	}
	for i := range s.Mounts {
		m := &s.Mounts[i]
		file := false
		if slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind") || m.Type == "bind" {
			if fi, err := os.Stat(m.Source); err == nil && !fi.IsDir() {
				file = true
			}
		}
		if file {
			m.Options = slices.DeleteFunc(m.Options, func(o string) bool { return o == "rro" })
			if !slices.Contains(m.Options, "ro") {
				m.Options = append(m.Options, "ro")
			}
		}
		point := filepath.Join(rootfs, filepath.Clean("/"+m.Destination))
		if !strings.HasPrefix(point, rootfs+"/") {
			return fmt.Errorf("mount destination %q leaves the rootfs", m.Destination)
		}
		if file {
			dir, err := mkdir(filepath.Dir(point))
			if err != nil {
				return err
			}
			fd, err := unix.Openat(int(dir.Fd()), filepath.Base(point), unix.O_CREAT|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
			dir.Close()
			if err != nil {
				return &os.PathError{Op: "create mount point", Path: point, Err: err}
			}
			unix.Close(fd)
			continue
		}
		d, err := mkdir(point)
		if err != nil {
			return err
		}
		d.Close()
	}
	if s.Process != nil && s.Process.Cwd != "" {
		d, err := mkdir(filepath.Join(rootfs, filepath.Clean("/"+s.Process.Cwd)))
		if err != nil {
			return err
		}
		d.Close()
	}
	return nil
}

// emptyDir makes dir, or checks that it is an empty directory. made is
// the topmost directory it created ("" when dir was there already).
func emptyDir(dir string) (made string, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		made = abs
		for p := filepath.Dir(abs); p != made; p = filepath.Dir(p) {
			if _, err := os.Lstat(p); err == nil {
				break
			}
			made = p
		}
		return made, os.MkdirAll(abs, 0o755)
	}
	if err != nil {
		return "", err
	}
	if len(entries) > 0 {
		return "", fmt.Errorf("%s is not empty; give a new or empty directory", dir)
	}
	return "", nil
}
