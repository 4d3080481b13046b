// Package broker decides and performs, outside the sandbox, the system
// calls by which a sandboxed process creates, removes, renames, links or
// opens for writing a path: the calls cordon's seccomp filter hands to it
// through a seccomp user-notification descriptor.
//
// The broker never lets such a call continue in the kernel
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE would re-read the caller's path, which
// another of its threads can change after the check); only umask(2), which
// it watches to keep each caller's umask (umask_linux.go), and a clone(2)
// that makes a thread without CLONE_FS (cwd_linux.go), continue. It copies the path
// out of the caller's memory, resolves it in the sandbox's own view (the
// caller's root, working directory or directory descriptor, with openat2
// and RESOLVE_IN_ROOT), decides on the resolved path, and performs the
// call itself on the directory descriptor it resolved, with the caller's
// ids, umask and no capabilities; an opened file is installed in the
// caller with SECCOMP_IOCTL_NOTIF_ADDFD. A refusal is recorded with its
// path: the runner reports it from this record, not from the command's
// output.
package broker

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/awake"
)

// Policy decides which paths the sandbox may change.
type Policy interface {
	// Refuse returns the rule that forbids creating, changing or removing
	// the sandbox path p, or "" when nothing does. (A renamed directory is
	// walked: each entry is decided at its path and at its new one.)
	Refuse(p string) string
}

// ReadPolicy is a Policy that also decides reads (with strict_deny the
// filter sends those too). A Policy without it has every read decided by
// Refuse, which refuses more (fail closed).
type ReadPolicy interface {
	Policy
	// RefuseRead returns the rule that forbids reading the sandbox path p
	// (a deny rule: protected paths stay readable), or "".
	RefuseRead(p string) string
}

// Denial is one refused call.
type Denial struct {
	// Op is the system call ("openat", "mkdir", "rename", ...).
	Op string
	// Path is the sandbox path that was refused.
	Path string
	// Rule is the deny or protect entry that refused it.
	Rule string
	// Trackers are the pipes held by the caller's exec tracker (see
	// Observer); only an Observer is given them.
	Trackers []uint64
}

// Creds are the ids the broker acts with (root runs: the command's own;
// rootless runs act as the caller, who is the command's host uid).
type Creds struct {
	// Set says to switch to UID, GID and Groups; without it the broker
	// acts as cordon (rootless: the same uid as the command).
	Set      bool
	UID, GID int
	Groups   []int
}

// Broker serves one seccomp notification descriptor.
type Broker struct {
	fd     int
	policy Policy
	creds  Creds

	git      gitState
	gitFiles gitFiles
	ids      idMaps // the callers' uid and gid maps (meta_linux.go)
	pidfds   pidfds
	fifos    fifoWaits
	umasks   umasks // the callers' umasks (umask_linux.go)

	// names orders the calls that make or remove names against a
	// rename: a rename (which may walk a directory and decide what it
	// carries) holds it alone, every other call that makes or removes a
	// name shares it, so nothing appears in a directory between its walk
	// and its move (see nameLock).
	names sync.RWMutex

	// root is the sandbox's root directory (O_PATH), opened once from
	// the first caller's /proc/PID/root (see sandboxRoot); 0 until then.
	root   atomic.Int64
	rootMu sync.Mutex

	mu      sync.Mutex
	denials []Denial
	failed  error

	wg   sync.WaitGroup
	stop chan struct{}
	// baton is the right to receive: one token, held by the worker that
	// waits in SECCOMP_IOCTL_NOTIF_RECV (see worker).
	baton chan struct{}
	tids  []int // the workers' threads, under mu
	// callers holds the pid each worker (by its index in tids) is
	// performing a call for.
	callers [maxWorkers]atomicInt32
	// idle counts the workers waiting for the baton; nworkers those
	// started (under mu).
	idle     atomic.Int32
	nworkers int
	// work is b.worker (through a field: the call table's functions
	// start workers, and worker uses the table).
	work func()
	// awake: the process's keeper runs and this broker pokes it.
	awake bool
}

// AwakePolicy is a Policy that may turn the keeper off (internal/awake):
// a sandbox with a CPU limit gets none, since the keeper's spinning is
// CPU the command causes outside its cgroup. A Policy that does not
// implement it gets the keeper.
type AwakePolicy interface {
	Policy
	// KeepAwake reports whether the broker may keep a CPU busy while
	// calls flow.
	KeepAwake() bool
}

// keepsAwake reports whether a broker with policy p uses the keeper.
func keepsAwake(p Policy) bool {
	kp, ok := p.(AwakePolicy)
	return !ok || kp.KeepAwake()
}

type atomicInt32 = atomic.Int32

// workers is how many workers start; more start, up to maxWorkers, when
// the baton is passed on with none waiting for it (calls that block, a
// FIFO's open each, would otherwise leave no worker to receive).
const (
	workers    = 2
	maxWorkers = 16
)

// Start serves fd (which the broker now owns) until Stop.
func Start(fd int, p Policy, c Creds) *Broker {
	b := &Broker{fd: fd, policy: p, creds: c, stop: make(chan struct{}), baton: make(chan struct{}, 1)}
	_ = setSyncWakeUp(fd) // best effort: see setSyncWakeUp
	if keepsAwake(p) {
		b.awake = awake.Start() // see the Poke in handle, before sendFD
	}
	b.baton <- struct{}{}
	b.work = b.worker
	for range workers {
		b.spawn()
	}
	return b
}

// spawn starts a worker unless maxWorkers run already or the broker stops.
func (b *Broker) spawn() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.stop:
		return
	default:
	}
	if b.nworkers >= maxWorkers {
		return
	}
	b.nworkers++
	b.wg.Add(1)
	go b.work()
}

// pass hands the baton to an idle worker, starting one if none waits.
func (b *Broker) pass() {
	b.baton <- struct{}{}
	if b.idle.Load() == 0 {
		b.spawn()
	}
}

// Stop ends the service and closes the descriptor: a call still notified
// then fails in the kernel (ENOSYS); nothing runs unchecked.
func (b *Broker) Stop() {
	close(b.stop)
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	for {
		// SIGURG interrupts a worker's wait for a call; the runtime
		// ignores it otherwise. A worker about to wait may miss one, so
		// it is sent again until every worker is gone.
		b.mu.Lock()
		for _, tid := range b.tids {
			_ = unix.Tgkill(unix.Getpid(), tid, unix.SIGURG)
		}
		b.mu.Unlock()
		b.fifos.release()
		select {
		case <-done:
			unix.Close(b.fd)
			if r := b.root.Load(); r > 0 {
				unix.Close(int(r))
			}
			b.pidfds.mu.Lock()
			b.pidfds.closeAll()
			b.pidfds.mu.Unlock()
			b.umasks.closeAll()
			return
		case <-afterShort():
		}
	}
}

// sandboxRoot returns the sandbox's root directory, in which every path
// is resolved. It is opened once, from the first caller's /proc/PID/root,
// and checked to be that caller's (the notification is still pending, so
// the pid was not reused meanwhile). Every process under the filter has
// this same root and mount namespace: the sandbox init loads the filter
// after the container's pivot_root, and the filter's profile refuses
// chroot, pivot_root, mount, unshare, setns and a clone with a namespace
// flag. Opening it per call cost an open of /proc/PID/root and a close
// (about 4 µs); and a caller that died during its call, its pid taken by a
// host process, could have had its path resolved in that process's root.
func (b *Broker) sandboxRoot(c *call) (int, error) {
	if r := b.root.Load(); r > 0 {
		return int(r), nil
	}
	b.rootMu.Lock()
	defer b.rootMu.Unlock()
	if r := b.root.Load(); r > 0 {
		return int(r), nil
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(c.pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, unix.EACCES
	}
	if !valid(b.fd, c.n.ID) {
		unix.Close(fd)
		return -1, unix.ESRCH
	}
	b.root.Store(int64(fd))
	return fd, nil
}

func (b *Broker) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failed == nil {
		b.failed = err
	}
}

// Err is why the broker stopped serving early, if it did.
func (b *Broker) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failed
}

// Denials returns the refused calls so far, in order.
func (b *Broker) Denials() []Denial {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Denial(nil), b.denials...)
}

func (b *Broker) deny(op, path, rule string) {
	b.denyFor(b.callerPid(), nil, op, path, rule)
}

// denyFor records a refusal of a call by pid (or, with trackers given, by
// a process whose trackers were found earlier).
func (b *Broker) denyFor(pid int, tr []uint64, op, path, rule string) {
	b.mu.Lock()
	if len(b.denials) < 1000 {
		b.denials = append(b.denials, Denial{Op: op, Path: path, Rule: rule})
	}
	b.mu.Unlock()
	b.observe(Denial{Op: op, Path: path, Rule: rule, Trackers: tr}, pid)
}

// worker receives and performs calls on a thread of its own: its umask is
// per thread (CLONE_FS unshared) and, for root runs, so are its ids and
// capabilities. Receiving there, not on a thread that hands the call over,
// saves a thread wake-up per call. The thread is never handed back to the
// runtime: it ends with the worker.
//
// One worker at a time receives: the one holding the baton. The kernel
// wakes every thread waiting in SECCOMP_IOCTL_NOTIF_RECV for each
// notification (its wait queue is not exclusive), so four waiting workers
// cost four wake-ups a call, three of them for nothing. The holder keeps
// the baton from one call to the next, so a sequence of calls (tar's, git
// checkout's) is served by one thread with no hand-off at all, and passes
// it to an idle worker (one wake-up) when another call is already waiting
// to be received, or before performing a call that may block (call.mayBlock:
// an open of a FIFO or a device, the walk of a renamed directory), so the
// others are still received meanwhile.
func (b *Broker) worker() {
	defer b.wg.Done()
	runtime.LockOSThread()
	b.mu.Lock()
	idx := len(b.tids)
	b.tids = append(b.tids, unix.Gettid())
	b.mu.Unlock()
	ok := unix.Unshare(unix.CLONE_FS) == nil
	if ok {
		// Its working directory is a sandbox directory after a call
		// (call.dirPath): let go of it before Stop returns.
		defer func() { _ = unix.Chdir("/") }()
	}
	if ok && b.creds.Set {
		ok = dropTo(b.creds) == nil
	}
	holding := false
	umask := -1 // this thread's, as last set (see call.applyUmask)
	for {
		if !holding {
			b.idle.Add(1)
			select {
			case <-b.stop:
			case <-b.baton:
				holding = true
			}
			b.idle.Add(-1)
		}
		select {
		case <-b.stop:
			if ok {
				b.publishGitFiles(true) // with the command's ids
			}
			return
		default:
		}
		n := new(notif)
		err := recv(b.fd, n)
		if err == unix.ENOENT && orphaned(b.fd) {
			// Every process of the filter has exited: nothing can come
			// any more, and recv would fail at once forever (a spin that
			// cost a run's teardown about 20 ms of CPU). The baton stays
			// with this worker: the others wait for Stop.
			if ok {
				b.publishGitFiles(true)
			}
			return
		}
		if err == unix.EINTR || err == unix.ENOENT {
			continue
		}
		if err != nil {
			b.fail(err)
			return
		}
		more, seen := b.peek(int(n.Pid))
		if more {
			b.pass()
			holding = false
		}
		if !ok {
			respond(b.fd, n.ID, 0, unix.EACCES)
			continue
		}
		if idx < len(b.callers) {
			b.callers[idx].Store(int32(n.Pid))
		}
		holding = b.handle(n, holding, &umask, seen)
	}
}

// mayBlock passes the baton on before the call does something that may
// wait for another process (a FIFO's open waits for the other end) or take
// long: the next calls are received by another worker meanwhile.
func (c *call) mayBlock() {
	if c.holding {
		c.holding = false
		c.b.pass()
	}
}

// dropTo makes this thread act as c with no capability but CAP_SYS_PTRACE
// (raw syscalls: they change this thread only).
func dropTo(c Creds) error {
	gids := make([]uint32, len(c.Groups))
	for i, g := range c.Groups {
		gids[i] = uint32(g)
	}
	var p uintptr
	if len(gids) > 0 {
		p = uintptr(unsafePointer(&gids[0]))
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gids)), p, 0); e != 0 {
		return e
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(c.GID), uintptr(c.GID), uintptr(c.GID)); e != 0 {
		return e
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(c.UID), uintptr(c.UID), uintptr(c.UID)); e != 0 {
		return e
	}
	// CAP_SYS_PTRACE alone stays: reading the caller's memory and its
	// /proc entries needs it when the caller is not dumpable (the session
	// init's shims); it grants nothing on files.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	data[0].Effective = 1 << unix.CAP_SYS_PTRACE
	data[0].Permitted = 1 << unix.CAP_SYS_PTRACE
	return unix.Capset(&hdr, &data[0])
}

// fifoWaits are the FIFOs workers are opening, which waits for the other
// end. A signal does not end that wait (the runtime's handlers restart the
// call), so Stop opens each one's other end itself (release), which ends
// the wait: a sandbox gone with a writer still waiting for a reader would
// otherwise keep its worker, and Stop, waiting for ever.
type fifoWaits struct {
	mu   sync.Mutex
	next int
	m    map[int]fifoWait
}

type fifoWait struct {
	fd    int // O_PATH of the FIFO
	flags int // the waiting open's
}

// fifoWait records that this worker is about to open the FIFO at l with
// flags; the returned function forgets it.
func (b *Broker) fifoWait(l loc, flags int) func() {
	fd, err := unix.Openat(l.dir, l.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return func() {}
	}
	f := &b.fifos
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[int]fifoWait{}
	}
	id := f.next
	f.next++
	f.m[id] = fifoWait{fd: fd, flags: flags}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.m, id)
		unix.Close(fd)
	}
}

// release opens the other end of every FIFO a worker waits on, without
// waiting (O_NONBLOCK), and closes it again: the waiting open returns.
func (f *fifoWaits) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.m {
		var st unix.Stat_t
		if unix.Fstat(w.fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			continue
		}
		other := unix.O_RDONLY
		if w.flags&unix.O_ACCMODE == unix.O_RDONLY {
			other = unix.O_WRONLY
		}
		if fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(w.fd), other|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
		}
	}
}
