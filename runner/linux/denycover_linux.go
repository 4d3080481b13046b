package linux

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
)

// denyCoverArg makes the re-executed binary the deny cover helper of one
// sandbox (denycover_linux.c): a process in the sandbox's user and mount
// namespaces that mounts a cover over a denied path the host filled.
const denyCoverArg = "cordon-deny-cover"

// The helper's answers (dc_reply in denycover_linux.c).
const (
	denyCovered int32 = iota // the file is covered now
	denyNotThis              // the path names another file (already covered, or replaced again)
	denyGone                 // the path is gone, or reached through a symlink
	denyFailed               // the cover could not be mounted: err and step say why
)

// denyCoverSteps name the helper's steps in a failure.
var denyCoverSteps = []string{"", "fstat", "open_tree", "mount_setattr",
	"fsopen", "fsconfig", "fsmount", "move_mount", "openat2"}

// denyCoverer is the supervisor's end of a sandbox's deny cover helper.
type denyCoverer struct {
	mu     sync.Mutex
	conn   *os.File
	cmd    *exec.Cmd
	stderr *runner.TailBuffer
	waited chan struct{}
}

// startDenyCoverer starts the helper in the namespaces of the process pid
// (the sandbox's init) and waits until it has joined them.
func startDenyCoverer(pid int) (*denyCoverer, error) {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, ns := range []string{"user", "mnt"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err != nil {
			return nil, fmt.Errorf("the sandbox's %s namespace: %w", ns, err)
		}
		files = append(files, f)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	conn := os.NewFile(uintptr(fds[0]), "deny-cover")
	files = append(files, os.NewFile(uintptr(fds[1]), "deny-cover-helper"))
	c := &denyCoverer{conn: conn, stderr: runner.NewTailBuffer(1024), waited: make(chan struct{})}
	c.cmd = exec.Command("/proc/self/exe", denyCoverArg)
	c.cmd.ExtraFiles = files // fds 3, 4 and 5 (denycover_linux.c)
	c.cmd.Dir = "/"
	c.cmd.Env = []string{}
	c.cmd.Stderr = c.stderr
	if err := c.cmd.Start(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	go func() { _ = c.cmd.Wait(); close(c.waited) }()
	b := make([]byte, 1)
	if n, err := conn.Read(b); n != 1 || b[0] != 'R' {
		c.close()
		return nil, fmt.Errorf("the helper did not start (%v): %s", err, strings.TrimSpace(c.stderr.String()))
	}
	return c, nil
}

// cover asks the helper to cover the file the host sees as (dev, ino) at
// sandbox path p, if p still names it in the sandbox.
func (c *denyCoverer) cover(p string, dev, ino uint64) (int32, error) {
	if len(p) >= 4095 {
		return denyFailed, fmt.Errorf("cover %s: the path is too long", p)
	}
	req := make([]byte, 16, 16+len(p)+1)
	binary.NativeEndian.PutUint64(req, dev)
	binary.NativeEndian.PutUint64(req[8:], ino)
	req = append(append(req, p...), 0)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.conn.Write(req); err != nil {
		return denyFailed, fmt.Errorf("cover %s: the helper: %w", p, err)
	}
	var rep [12]byte
	if n, err := c.conn.Read(rep[:]); n != len(rep) {
		return denyFailed, fmt.Errorf("cover %s: the helper ended (%v): %s", p, err, strings.TrimSpace(c.stderr.String()))
	}
	status := int32(binary.NativeEndian.Uint32(rep[:]))
	if status != denyFailed {
		return status, nil
	}
	errno := unix.Errno(binary.NativeEndian.Uint32(rep[4:]))
	step := "?"
	if s := int(binary.NativeEndian.Uint32(rep[8:])); s > 0 && s < len(denyCoverSteps) {
		step = denyCoverSteps[s]
	}
	return denyFailed, fmt.Errorf("cover %s in the sandbox: %s: %w", p, step, errno)
}

// close ends the helper (it exits at EOF) and waits for it.
func (c *denyCoverer) close() {
	c.mu.Lock()
	c.conn.Close()
	c.mu.Unlock()
	<-c.waited
}
