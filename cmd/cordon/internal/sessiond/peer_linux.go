package sessiond

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// checkServer returns nil when the server of c, a connection to session
// name's socket, is that session's supervisor (serverWhy); nothing is sent
// to a server that fails the check. `cordon exec`'s C client makes the same
// check (cmd/cordon/execserver_linux.c).
func (d *Dir) checkServer(c *net.UnixConn, name string) error {
	if why := serverWhy(c, d.sessionDir(name)); why != "" {
		return fmt.Errorf("%w: %s (%s)", ErrNotSupervisor, name, why)
	}
	return nil
}

// infoPID is the supervisor's pid as the info.json in dir records it, or 0.
func infoPID(dir string) int {
	var info Info
	data, err := os.ReadFile(filepath.Join(dir, "info.json"))
	if err == nil {
		err = json.Unmarshal(data, &info)
	}
	if err != nil {
		return 0
	}
	return info.PID
}

// inThisPIDNamespace reports whether pid has one pid on its NSpid line: a
// process inside a sandbox (a PID namespace below this one) has more.
func inThisPIDNamespace(pid int) bool {
	n, err := nsPIDs(pid)
	return err == nil && n == 1
}

// nsPIDs counts the pids on pid's NSpid line (/proc/PID/status): one per
// PID namespace it is in, from this one down. It reads the file with raw
// system calls (open, read to the end, close): both ends of every exec
// make this check, and os.ReadFile's poller and size probe cost more than
// the read.
func nsPIDs(pid int) (int, error) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	for _, line := range strings.Split(string(buf), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			return len(strings.Fields(rest)), nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no NSpid line", pid)
}

// peerCred returns the credentials of the process at the other end of c
// (SO_PEERCRED): the client's for a server, the server's for a client.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return nil, err
	}
	return cred, cerr
}
