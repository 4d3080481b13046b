package console

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SocketPair is the pair of connected unix sockets libcontainer hands a
// console over: parent is cordon's end, child the container's.
func SocketPair() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[1]), "console-parent"), os.NewFile(uintptr(fds[0]), "console-child"), nil
}

// RecvFile receives one descriptor over a unix socket (SCM_RIGHTS).
func RecvFile(sock *os.File) (*os.File, error) {
	name := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), name, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("recvmsg: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("console: expected one control message (%v)", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("console: expected one descriptor (%v)", err)
	}
	return os.NewFile(uintptr(fds[0]), string(name[:n])), nil
}
