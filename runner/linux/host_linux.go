package linux

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/spec"
)

// ProbeHost reads what the OCI translation needs to know of this kernel:
// recursive read-only binds (Linux 5.12), cgroup namespaces, and, asked
// only on older kernels, the mount table. The kernel facts are read once
// per process.
func ProbeHost() spec.Host {
	k := kernelFacts()
	return spec.Host{
		RecursiveReadonly: k.recursiveRO,
		CgroupNamespace:   k.cgroupNS,
		Submounts:         hasSubmounts,
		Arch:              runtime.GOARCH,
	}
}

type kernel struct {
	release     string
	recursiveRO bool
	cgroupNS    bool
}

var kernelFacts = sync.OnceValue(func() kernel {
	var k kernel
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		k.release = unix.ByteSliceToString(u.Release[:])
	}
	k.recursiveRO = kernelAtLeast(k.release, 5, 12)
	_, err := os.Stat("/proc/self/ns/cgroup")
	k.cgroupNS = err == nil
	return k
})

// hasSubmounts reports whether anything is mounted strictly below source,
// after resolving its symlinks, according to /proc/self/mountinfo.
func hasSubmounts(source string) (bool, error) {
	resolved, err := filepath.EvalSymlinks(source)
	if err != nil {
		return false, err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	return submountsIn(bufio.NewScanner(f), resolved)
}

// userNamespacesAvailable reports whether an unprivileged user can create a
// user namespace here.
func userNamespacesAvailable() bool {
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil {
		if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n == 0 {
			return false
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil {
		if strings.TrimSpace(string(b)) == "0" {
			return false
		}
	}
	return true
}
