package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// HelperArg makes the re-executed binary the tun helper (see HelperMain).
const HelperArg = "cordon-net-helper"

// TunFor makes the Device (see MakeTun) in the network namespace of
// process pid (a sandbox's init that has not started the command yet).
// When the namespace belongs to the caller's own user
// namespace (root without a user namespace) a locked thread joins it;
// otherwise a helper does, re-executed from this binary (see HelperMain).
// The namespace is the sandbox's and ends with it (see
// Device.EndsWithNamespace).
func TunFor(pid int, dns []netip.Addr, fwd []netip.AddrPort) (*Device, error) {
	userns, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/user")
	if err != nil {
		return nil, fmt.Errorf("the sandbox's user namespace: %w", err)
	}
	defer userns.Close()
	netns, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return nil, fmt.Errorf("the sandbox's network namespace: %w", err)
	}
	defer netns.Close()
	var a, b unix.Stat_t
	if err := unix.Fstat(int(userns.Fd()), &a); err != nil {
		return nil, fmt.Errorf("the sandbox's user namespace: %w", err)
	}
	if err := unix.Stat("/proc/self/ns/user", &b); err != nil {
		return nil, fmt.Errorf("cordon's user namespace: %w", err)
	}
	var dev *Device
	if a.Ino == b.Ino && a.Dev == b.Dev {
		dev, err = tunInThread(netns, dns, fwd)
	} else {
		dev, err = tunByHelper(userns, netns, dns, fwd)
	}
	if err != nil {
		return nil, err
	}
	dev.EndsWithNamespace = true
	return dev, nil
}

// NewNamespace makes a network namespace for a sandbox to join (root
// without a user namespace: the namespace belongs to cordon's user
// namespace, as one the sandbox's init made would): a locked thread
// unshares one and returns to its own. The caller holds the namespace
// open until the sandbox has joined it, and makes its device with TunIn
// meanwhile.
func NewNamespace() (*os.File, error) {
	type result struct {
		ns  *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("cordon's network namespace: %w", err)}
			return
		}
		defer self.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("new network namespace: %w", err)}
			return
		}
		ns, err := os.Open("/proc/thread-self/ns/net")
		if rerr := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); rerr != nil {
			// The thread stays locked: the runtime ends it.
			if ns != nil {
				ns.Close()
			}
			ch <- result{err: fmt.Errorf("return to cordon's network namespace: %w", rerr)}
			return
		}
		runtime.UnlockOSThread()
		if err != nil {
			err = fmt.Errorf("new network namespace: %w", err)
		}
		ch <- result{ns, err}
	}()
	r := <-ch
	return r.ns, r.err
}

// TunIn makes the Device (see MakeTun) in netns, a sandbox's network
// namespace that belongs to cordon's own user namespace (see
// NewNamespace) and ends with the sandbox (see Device.EndsWithNamespace).
func TunIn(netns *os.File, dns []netip.Addr, fwd []netip.AddrPort) (*Device, error) {
	dev, err := tunInThread(netns, dns, fwd)
	if err != nil {
		return nil, err
	}
	dev.EndsWithNamespace = true
	return dev, nil
}

// tunInThread joins netns on a locked thread, makes the tun device there
// and returns. A thread that cannot go back is never unlocked, so the
// runtime ends it instead of reusing it.
func tunInThread(netns *os.File, dns []netip.Addr, fwd []netip.AddrPort) (*Device, error) {
	type result struct {
		dev *Device
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- result{err: fmt.Errorf("cordon's network namespace: %w", err)}
			return
		}
		defer self.Close()
		if err := unix.Setns(int(netns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("join the sandbox's network namespace: %w", err)}
			return
		}
		dev, err := MakeTun(dns, fwd)
		if rerr := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); rerr != nil {
			if dev != nil {
				dev.Close()
			}
			ch <- result{err: fmt.Errorf("return to cordon's network namespace: %w", rerr)}
			return
		}
		runtime.UnlockOSThread()
		ch <- result{dev, err}
	}()
	r := <-ch
	return r.dev, r.err
}

// tunByHelper runs the helper with the namespaces as fds 3 and 4 and a
// socket as fd 5, over which it sends the Device (the tun first) or its
// error; the DNS addresses are its arguments.
func tunByHelper(userns, netns *os.File, dns []netip.Addr, fwd []netip.AddrPort) (*Device, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("tun helper socket: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "tun-helper"), os.NewFile(uintptr(fds[1]), "tun-helper")
	defer mine.Close()
	args := []string{HelperArg}
	for _, a := range dns {
		args = append(args, a.String())
	}
	for _, ap := range fwd {
		args = append(args, ap.String())
	}
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.ExtraFiles = []*os.File{userns, netns, theirs}
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &limitedBuffer{max: 4096}
	cmd.Stderr = out
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		return nil, fmt.Errorf("start the tun helper: %w", err)
	}
	dev, rerr := receiveDevice(mine)
	werr := cmd.Wait()
	switch {
	case rerr != nil && werr != nil:
		return nil, fmt.Errorf("tun helper: %w: %s", werr, out.String())
	case rerr != nil:
		return nil, rerr
	}
	return dev, nil
}

// maxDNSFiles and maxForwards bound the sockets of a Device.
const (
	maxDNSFiles = 16
	maxForwards = 32
)

// receiveDevice reads the helper's message: descriptors, or an error text.
func receiveDevice(sock *os.File) (*Device, error) {
	buf := make([]byte, 1024)
	oob := make([]byte, unix.CmsgSpace(4*(1+maxDNSFiles+maxForwards)))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("tun helper: %w", err)
	}
	return deviceFromReply(buf[:n], oob[:oobn])
}

// deviceFromReply decodes the helper's reply: one byte, the number of DNS
// sockets, with the tun, the DNS sockets and the forwards (SCM_RIGHTS, in
// that order); or, without descriptors, its error text. Every descriptor
// of a reply it refuses is closed: none stays open in the supervisor.
func deviceFromReply(msg, oob []byte) (*Device, error) {
	if len(oob) == 0 {
		if len(msg) == 0 {
			return nil, errors.New("tun helper: no reply")
		}
		return nil, errors.New(string(msg))
	}
	var fds []int
	msgs, err := unix.ParseSocketControlMessage(oob)
	for i := range msgs {
		if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	if err != nil || len(msgs) != 1 || len(fds) < 1 || len(msg) != 1 || int(msg[0]) >= len(fds) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("tun helper: malformed reply (%d bytes, %d descriptors)", len(msg), len(fds))
	}
	d := &Device{Tun: os.NewFile(uintptr(fds[0]), "/dev/net/tun")}
	for i, fd := range fds[1:] {
		if i < int(msg[0]) {
			d.DNS = append(d.DNS, os.NewFile(uintptr(fd), "dns"))
		} else {
			d.Forward = append(d.Forward, os.NewFile(uintptr(fd), "forward"))
		}
	}
	return d, nil
}

// HelperMain is reached only when the tun helper's C constructor
// (helper_linux.c) did not run: the constructor joins the sandbox's
// namespaces, makes the device there, sends it over fd 5 and exits before
// the Go runtime starts, which was most of the helper's time. It never
// returns.
func HelperMain() {
	msg := "cordon-net-helper: the helper did not run (built without cgo?)"
	_, _ = os.NewFile(5, "tun-helper").Write([]byte(msg))
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(125)
}

type limitedBuffer struct {
	b   []byte
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
