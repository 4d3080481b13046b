package broker

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// bind(2) of a unix socket to a path creates a socket file: it is decided
// like any create, on the name resolved in the sandbox's view, and
// performed by the broker on the caller's own socket (pidfd_getfd), bound
// to that name in the directory the broker resolved (the worker's working
// directory is its own: CLONE_FS is unshared). The socket's address is
// then the bare name (getsockname shows "NAME" where the caller gave
// "dir/NAME" or "/abs/dir/NAME"): the broker cannot bind to the caller's
// string without resolving it again in its own view. Every other bind (an
// abstract unix name, autobind, any other family) is performed as given,
// on the broker's copy of the address, so the caller cannot change it into
// a path after the check.

// sockaddrMax is sizeof(struct sockaddr_storage).
const sockaddrMax = 128

// takeFD duplicates the caller's descriptor fd into the broker: the very
// open file (a socket stays that socket).
func (c *call) takeFD(fd int32) (int, error) {
	if fd < 0 {
		return -1, unix.EBADF
	}
	nfd, err := c.b.pidfds.take(c.pid, int(fd), c.live)
	if err != nil {
		return -1, unix.EBADF
	}
	c.keep(nfd)
	// The pidfd is the caller's only if the call is still pending: checked
	// before the descriptor is used.
	if err := c.live(); err != nil {
		return -1, err
	}
	return nfd, nil
}

// pidfds keeps a pidfd per calling thread (tid), so a call on a
// descriptor (fchmod, fchown, futimens, fsetxattr, bind; tar makes three
// per file) takes the caller's descriptor with one pidfd_getfd instead of
// pidfd_open, pidfd_getfd and close. A cached pidfd is the caller's: it
// was opened for a caller whose call was pending; if its thread is alive
// it still holds that tid, and the notification comes from the live
// holder of the tid; if it died, pidfd_getfd fails and a new one is
// opened for the caller. What is taken is checked with call.live before
// use, as every read from the caller.
//
// The descriptor is taken under mu: a worker that evicts the cache (at
// max entries) closes every cached pidfd, and a pidfd closed while another
// worker is about to use its number could be reopened by then for another
// thread, whose descriptor would be taken instead
// (TestPidfdsEvictionKeepsTakesApart).
type pidfds struct {
	mu sync.Mutex
	m  map[int]int
	// max bounds the cache (0: maxPidfds); all are closed when it is full.
	max int
	// beforeGetfd, when set (tests only), runs between finding the pidfd
	// and pidfd_getfd.
	beforeGetfd func()
}

// maxPidfds bounds the cache: all are closed when it is full.
const maxPidfds = 256

// take duplicates descriptor fd of thread tid into the broker. live says
// whether the caller's notification is still pending (so tid is still the
// caller's).
func (p *pidfds) take(tid, fd int, live func() error) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pfd, cached, err := p.get(tid, live)
	if err != nil {
		return -1, err
	}
	if p.beforeGetfd != nil {
		p.beforeGetfd()
	}
	nfd, err := unix.PidfdGetfd(pfd, fd, 0)
	if err != nil && cached {
		// The cached thread may be gone (its tid now the caller's):
		// again with a pidfd of the caller itself.
		delete(p.m, tid)
		unix.Close(pfd)
		if pfd, _, err = p.get(tid, live); err != nil {
			return -1, err
		}
		nfd, err = unix.PidfdGetfd(pfd, fd, 0)
	}
	return nfd, err
}

// get returns a pidfd for thread tid and whether it was cached (under mu).
func (p *pidfds) get(tid int, live func() error) (int, bool, error) {
	if fd, ok := p.m[tid]; ok {
		return fd, true, nil
	}
	pfd, err := unix.PidfdOpen(tid, pidfdThread)
	if err != nil {
		// Before Linux 6.9 only a process (its leader) has a pidfd; the
		// threads share its descriptors.
		if pfd, err = unix.PidfdOpen(tid, 0); err != nil {
			return -1, false, err
		}
	}
	if err := live(); err != nil {
		unix.Close(pfd)
		return -1, false, err
	}
	limit := p.max
	if limit <= 0 {
		limit = maxPidfds
	}
	if len(p.m) >= limit {
		p.closeAll()
	}
	if p.m == nil {
		p.m = map[int]int{}
	}
	p.m[tid] = pfd
	return pfd, false, nil
}

// closeAll closes every cached pidfd (under mu).
func (p *pidfds) closeAll() {
	for _, fd := range p.m {
		unix.Close(fd)
	}
	clear(p.m)
}

func rawBind(fd int, addr []byte) error {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(p), uintptr(len(addr)))
	if e != 0 {
		return e
	}
	return nil
}

func (b *Broker) bind(c *call, op string, sockfd int32, addrAddr uint64, addrLen int32) result {
	if addrLen < 0 || addrLen > sockaddrMax {
		return fail(unix.EINVAL)
	}
	addr, err := c.bytesAt(addrAddr, int(addrLen))
	if err != nil {
		return fail(err)
	}
	sock, err := c.takeFD(sockfd)
	if err != nil {
		return fail(err)
	}
	if len(addr) <= 2 || binary.LittleEndian.Uint16(addr) != unix.AF_UNIX || addr[2] == 0 {
		return errResult(rawBind(sock, addr))
	}
	name := addr[2:]
	for i, ch := range name {
		if ch == 0 {
			name = name[:i]
			break
		}
	}
	l, err := c.at(unix.AT_FDCWD, string(name))
	if err != nil {
		return fail(err)
	}
	if !b.check(op, l.path) {
		return fail(unix.EACCES)
	}
	// A socket is a name like any other to git's discovery (it takes a
	// socket at refs: it only asks access(X_OK)), so the shape rules
	// decide it as they decide a file made there.
	unlock, r, made := b.lockedMake(c, op, l, false)
	if !made {
		return r
	}
	defer unlock()
	if len(l.name) > 107 {
		return fail(unix.EINVAL)
	}
	if err := unix.Fchdir(l.dir); err != nil {
		return fail(err)
	}
	c.applyUmask()
	sa := make([]byte, 2+len(l.name)+1)
	binary.LittleEndian.PutUint16(sa, unix.AF_UNIX)
	copy(sa[2:], l.name)
	err = rawBind(sock, sa)
	// The worker's working directory pins nothing of the sandbox's.
	_ = unix.Chdir("/")
	return errResult(err)
}
