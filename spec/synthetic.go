package spec

import (
	"fmt"
	"path"
	"strings"
)

// DeviceNodes are the device nodes every Linux sandbox has in its /dev:
// libcontainer creates exactly these, behind a deny-all device rule.
var DeviceNodes = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// devDirs are what else the sandbox's /dev holds: its own devpts, shm and
// mqueue, and the links libcontainer makes to the process's descriptors.
var devDirs = []string{"/dev/pts", "/dev/shm", "/dev/mqueue", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/ptmx"}

// procOwn are the /proc directories of the process itself, where the
// kernel lets a process write some of its own files.
var procOwn = []string{"/proc/self", "/proc/thread-self"}

// SyntheticUse says whether a command may read (write false) or write p,
// an absolute sandbox path in dir, one of the directories every sandbox
// makes up instead of mounting a host directory (its private /tmp, /proc
// and /dev): nil when it may, else why not. It is what the OCI spec (Build)
// puts there: a fresh tmpfs at /tmp, the device nodes of DeviceNodes in
// /dev, and a /proc with Docker's masked and read-only paths.
func SyntheticUse(dir, p string, write bool) error {
	p = path.Clean(p)
	op := "read"
	if write {
		op = "write"
	}
	switch dir {
	case "/tmp":
		return nil
	case "/dev":
		if p == "/dev" && !write {
			return nil
		}
		for _, d := range append(append([]string(nil), DeviceNodes...), devDirs...) {
			if under(p, d) {
				return nil
			}
		}
		return fmt.Errorf("cannot %s %s: no such device in the sandbox; /dev holds only %s and %s",
			op, p, strings.Join(DeviceNodes, ", "), strings.Join(devDirs[:3], ", "))
	case "/proc":
		for _, m := range dockerMaskedPaths {
			if under(p, m) {
				return fmt.Errorf("cannot %s %s: masked in the sandbox (a kernel interface that leaks host information)", op, p)
			}
		}
		if !write {
			return nil
		}
		for _, o := range procOwn {
			if under(p, o) {
				return nil
			}
		}
		return fmt.Errorf("cannot write %s: read-only in the sandbox (only a process's own /proc/self files take writes)", p)
	}
	return fmt.Errorf("%s is not a directory the sandbox makes up", dir)
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
