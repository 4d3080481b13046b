package session

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
// name's socket, is that session's supervisor: the caller's uid, the pid
// the session's info.json records, and a process of the caller's PID
// namespace (one pid on its NSpid line; a process inside a sandbox has
// more). `cordon exec`'s C clients make the same check
// (cmd/cordon/execfast_linux.c); nothing is sent to a server that fails it.
func (d *Dir) checkServer(c *net.UnixConn, name string) error {
	cred, err := peerCred(c)
	if err != nil {
		return fmt.Errorf("%w: %s (its server's credentials cannot be read: %w)", ErrNotSupervisor, name, err)
	}
	if int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s (its socket is served by uid %d)", ErrNotSupervisor, name, cred.Uid)
	}
	var info Info
	data, err := os.ReadFile(filepath.Join(d.sessionDir(name), "info.json"))
	if err == nil {
		err = json.Unmarshal(data, &info)
	}
	if err != nil || info.PID <= 0 {
		return fmt.Errorf("%w: %s (its info.json has no supervisor pid)", ErrNotSupervisor, name)
	}
	if int(cred.Pid) != info.PID {
		return fmt.Errorf("%w: %s (its socket is served by pid %d, its supervisor is pid %d)", ErrNotSupervisor, name, cred.Pid, info.PID)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(info.PID) + "/status")
	if err != nil {
		return fmt.Errorf("%w: %s (%w)", ErrNotSupervisor, name, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			if len(strings.Fields(rest)) == 1 {
				return nil
			}
			break
		}
	}
	return fmt.Errorf("%w: %s (its socket is served from inside a sandbox, not by its supervisor)", ErrNotSupervisor, name)
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
