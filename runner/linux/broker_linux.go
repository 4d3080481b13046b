package linux

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/broker"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// The broker (internal/broker) performs, outside the sandbox, every call
// that creates, removes, renames, links or opens a path for writing, and
// refuses those that would change a deny or protect path, whether it
// exists or not. So no placeholder is needed on the host for a missing
// path, and a host that renames over a covered file does not lift its
// protection: the decision is on the path, at the moment of the call.

// brokerOpenWrite are the open flags the filter sends to the broker:
// O_WRONLY|O_RDWR|O_CREAT|O_TRUNC (O_TMPFILE needs a write mode).
var brokerOpenWrite = []uint64{0o1, 0o2, 0o100, 0o1000}

// brokerENOSYS are calls that would change what the broker guards but
// that it does not perform: the *xattrat calls (Linux 6.13) take their
// value in a struct; the 32-bit ABI's (i386 and arm: the broker performs
// only the native one) own names for truncate, chown, lchown, fchown and
// utimensat, which the native table lacks, so the brokered names never
// reach them (TestIntegrationBrokerCompatABIRefused). They fail with
// ENOSYS, so a caller falls back to the brokered calls, as for openat2.
var brokerENOSYS = []string{"setxattrat", "removexattrat",
	"truncate64", "chown32", "lchown32", "fchown32", "utimensat_time64"}

// brokeredSeccomp rewrites the filter so that the broker's calls are
// notified to it: open and openat when a flag may write (with strict, every
// open but a bare O_PATH one, which reads nothing), the others always.
// The rules they had (the setid narrowing of spec/seccomp_modes.go) are
// replaced: the broker refuses S_ISUID and S_ISGID itself.
func brokeredSeccomp(c *configs.Seccomp, strict bool) *configs.Seccomp {
	names := broker.Syscalls()
	out := *c
	out.Syscalls = nil
	for _, s := range c.Syscalls {
		if s != nil && (slices.Contains(names, s.Name) || slices.Contains(brokerENOSYS, s.Name)) {
			continue
		}
		out.Syscalls = append(out.Syscalls, s)
	}
	var rules []*configs.Syscall
	for _, s := range out.Syscalls {
		rules = append(rules, watchClone(s)...)
	}
	out.Syscalls = rules
	enosys := uint(unix.ENOSYS)
	for _, n := range brokerENOSYS {
		out.Syscalls = append(out.Syscalls, &configs.Syscall{Name: n, Action: configs.Errno, ErrnoRet: &enosys})
	}
	flagArg := map[string]uint{"open": 1, "openat": 2}
	for _, n := range names {
		if !strict {
			if rules, fast := metaFastPath(n); fast {
				out.Syscalls = append(out.Syscalls, rules...)
				continue
			}
		}
		idx, isOpen := flagArg[n]
		if !isOpen {
			out.Syscalls = append(out.Syscalls, &configs.Syscall{Name: n, Action: configs.Notify})
			continue
		}
		var mask uint64
		for _, bit := range brokerOpenWrite {
			mask |= bit
			out.Syscalls = append(out.Syscalls, &configs.Syscall{Name: n, Action: configs.Notify,
				Args: []*configs.Arg{{Index: idx, Value: bit, ValueTwo: bit, Op: configs.MaskEqualTo}}})
		}
		if strict {
			// Every open without O_PATH is notified; one with O_PATH and
			// no write flag stays in the kernel (its descriptor reads
			// nothing: reopening it through /proc/self/fd is an open).
			out.Syscalls = append(out.Syscalls, &configs.Syscall{Name: n, Action: configs.Notify,
				Args: []*configs.Arg{{Index: idx, Value: unix.O_PATH, ValueTwo: 0, Op: configs.MaskEqualTo}}})
			out.Syscalls = append(out.Syscalls, &configs.Syscall{Name: n, Action: configs.Allow,
				Args: []*configs.Arg{{Index: idx, Value: mask | unix.O_PATH, ValueTwo: unix.O_PATH, Op: configs.MaskEqualTo}}})
			continue
		}
		out.Syscalls = append(out.Syscalls, &configs.Syscall{Name: n, Action: configs.Allow,
			Args: []*configs.Arg{{Index: idx, Value: mask, ValueTwo: 0, Op: configs.MaskEqualTo}}})
	}
	out.Syscalls = refuseOwnListener(out.DefaultAction, out.Syscalls)
	return &out
}

// refuseOwnListener makes an outright allow of seccomp(2) in rules (an
// allow rule with no condition, or no rule and a default action def that
// allows) refuse a filter with a listener of its own
// (SECCOMP_FILTER_FLAG_NEW_LISTENER) with EBUSY, the kernel's own answer
// while the broker's listener is open. Once that listener is closed the
// kernel would accept one, and a call the sandbox's newer filter notifies
// would go to the sandbox's listener first: cordon-oci's supervisor can die
// before its container (TestOCINoListenerOfItsOwn); a run's broker cannot,
// and holds the same rule. Other filters stay the sandbox's to install; a
// profile that refuses seccomp(2), or allows it only under conditions, is
// kept as it is (cordon-oci refuses the latter).
func refuseOwnListener(def configs.Action, rules []*configs.Syscall) []*configs.Syscall {
	allows := func(a configs.Action) bool { return a == configs.Allow || a == configs.Log }
	plain := allows(def)
	for _, r := range rules {
		if r != nil && r.Name == "seccomp" {
			if !allows(r.Action) || len(r.Args) > 0 {
				return rules
			}
			plain = true
		}
	}
	if !plain {
		return rules
	}
	rules = slices.DeleteFunc(rules, func(r *configs.Syscall) bool { return r != nil && r.Name == "seccomp" })
	busy := uint(unix.EBUSY)
	flag := uint64(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	return append(rules,
		&configs.Syscall{Name: "seccomp", Action: configs.Errno, ErrnoRet: &busy,
			Args: []*configs.Arg{{Index: 1, Value: flag, ValueTwo: flag, Op: configs.MaskEqualTo}}},
		&configs.Syscall{Name: "seccomp", Action: configs.Allow,
			Args: []*configs.Arg{{Index: 1, Value: flag, ValueTwo: 0, Op: configs.MaskEqualTo}}})
}

// cloneThreadFS are the clone flags of a thread that shares its working
// directory and umask (pthreads); CLONE_THREAD alone makes one that does
// not, which the broker must see (it keeps umasks: internal/broker's
// cwd_linux.go).
const cloneThreadFS = unix.CLONE_THREAD | unix.CLONE_FS

// watchClone returns the rules for the profile's rule s: s itself unless
// it allows clone, which is split so that a clone making a thread without
// CLONE_FS is notified (the broker continues it and keeps no umask from
// then on) and every other stays in the kernel. A
// clone rule whose first argument's condition is of another shape has
// every clone it allows notified (the broker reads the flags itself).
func watchClone(s *configs.Syscall) []*configs.Syscall {
	if s == nil || s.Name != "clone" || s.Action != configs.Allow {
		return []*configs.Syscall{s}
	}
	var rest []*configs.Arg
	var mask, want uint64
	seen := false
	for _, a := range s.Args {
		if a == nil || a.Index != 0 {
			rest = append(rest, a)
			continue
		}
		if seen || a.Op != configs.MaskEqualTo || (a.Value|a.ValueTwo)&cloneThreadFS != 0 {
			n := *s
			n.Action = configs.Notify
			return []*configs.Syscall{&n}
		}
		mask, want, seen = a.Value, a.ValueTwo, true
	}
	var out []*configs.Syscall
	for _, v := range []uint64{0, unix.CLONE_FS, cloneThreadFS, unix.CLONE_THREAD} {
		act := configs.Allow
		if v == unix.CLONE_THREAD {
			act = configs.Notify
		}
		args := append(slices.Clone(rest), &configs.Arg{Index: 0, Value: mask | cloneThreadFS, ValueTwo: want | v, Op: configs.MaskEqualTo})
		out = append(out, &configs.Syscall{Name: s.Name, Action: act, Args: args})
	}
	return out
}

// metaRiskyMode are the mode bits whose chmod is still notified in the
// default mode: execute (a hook made runnable), setuid and setgid (the
// broker refuses them), sticky, and write for group and others (a file
// others may then change). A mode with none of them takes bits away, or
// gives the owner read or write (moot: every writable open of a protected
// path is refused) or group and others read.
const metaRiskyMode = 0o7133

// metaModeArg is the index of the mode argument of each call that sets a
// mode: fchmod(fd, mode), chmod(path, mode), fchmodat(dirfd, path, mode)
// and fchmodat2(dirfd, path, mode, flags). Only the names this
// architecture's broker performs get rules (arm64 has no chmod).
var metaModeArg = map[string]uint{"fchmod": 1, "chmod": 1, "fchmodat": 2, "fchmodat2": 2}

// metaFastPath returns, for the calls that change a file's times, owner
// or mode (on a descriptor or by path), the rules that keep them in the
// kernel in the default mode (strict_deny notifies them all). tar makes
// three per file it extracts (fchown, fchmod, futimens on the descriptor
// the broker just installed for its create), git clone one per object it
// copies (utime on the path it just created): each a round trip of its
// own, they made untar three to four times as slow as the create alone,
// and a clone twice. They need no decision:
//   - a protected path that exists at start is a read-only mount, and a
//     denied one is covered by a read-only mask, so the kernel refuses
//     each of them there (EROFS: the mount is checked before the owner);
//     a path followed through a symlink, /proc/self/fd or a directory
//     descriptor is resolved by the kernel in the sandbox's view, so it
//     meets the same mount as any other way to the file;
//   - every writable open of a protected or denied path is brokered and
//     refused, so no descriptor the command holds was opened writable on
//     one, and the broker refuses to link, rename or move one into reach;
//   - the command has no capability: chown changes no owner, and a group
//     only to one of the command's own; a mode or explicit times only on
//     a file the command owns, times to now also on one it may write;
//   - a chmod whose mode has a bit of metaRiskyMode is still notified (the
//     mode's argument is read: metaModeArg), and so are the *xattr calls
//     (a POSIX ACL written as an attribute can grant execute); the 32-bit
//     ABI's calls take the same rules (chmod, fchmodat and fchmodat2 have
//     their mode at the same index there), and its names the native table
//     lacks (chown32, lchown32, fchown32, utimensat_time64) fail with ENOSYS
//     (brokerENOSYS).
//
// What remains (docs/performance.md, "The descriptor fast path"): on a
// protected file that no read-only mount covers (a protect pattern's
// match, a file the host created or renamed over a protected path
// mid-run, one the broker let git make), and on a denied file in the
// moment before the deny watcher covers it, the command may change the
// times (if it owns the file, or may write it and sets them to now), give
// the group to another of its own groups, and, if it owns the file, take
// mode bits away or add read for anyone or write for the owner. By path
// it needs no read permission for that (on a descriptor it needed one
// opened for reading), and AT_SYMLINK_NOFOLLOW reaches a symlink itself
// (its times and group; Linux ignores a symlink's mode and refuses to
// change it): a call that follows /proc/self/fd/N of an O_PATH descriptor
// of the symlink reaches it anyway, so notifying the flag would close
// nothing. cordon-oci's container may hold CAP_CHOWN and CAP_FOWNER: the
// kernel then applies them to these calls (the broker acts without), and
// its protected and denied paths are all read-only mounts (no patterns; a
// missing one cannot be made), so nothing guarded changes there.
func metaFastPath(name string) ([]*configs.Syscall, bool) {
	switch name {
	case "fchown", "chown", "lchown", "fchownat", "utimensat", "futimesat", "utimes", "utime":
		return []*configs.Syscall{{Name: name, Action: configs.Allow}}, true
	}
	idx, ok := metaModeArg[name]
	if !ok {
		return nil, false
	}
	var rules []*configs.Syscall
	for bit := uint64(1); bit <= metaRiskyMode; bit <<= 1 {
		if bit&metaRiskyMode != 0 {
			rules = append(rules, &configs.Syscall{Name: name, Action: configs.Notify,
				Args: []*configs.Arg{{Index: idx, Value: bit, ValueTwo: bit, Op: configs.MaskEqualTo}}})
		}
	}
	return append(rules, &configs.Syscall{Name: name, Action: configs.Allow,
		Args: []*configs.Arg{{Index: idx, Value: metaRiskyMode, ValueTwo: 0, Op: configs.MaskEqualTo}}}), true
}

// brokerPolicy refuses changes to the sandbox's deny and protect paths
// (and what lies below them), at every sandbox path of the same host file.
type brokerPolicy struct {
	rules []brokerRule
	// capped: limits.cpus is set, so the broker keeps no CPU awake (its
	// spinning would be CPU outside the sandbox's limit).
	capped bool
}

// brokerRule is one entry, compiled: the broker decides every create,
// remove and rename against each (34 with the default workspace profile),
// so matching allocates nothing.
type brokerRule struct {
	kind, path string
	match      spec.Rule
	text       string // what Refuse returns: kind + " " + path
	lead       string // the path, or a pattern's literal prefix (Leads)
}

func newBrokerRule(kind, path string) brokerRule {
	return brokerRule{kind: kind, path: path, match: spec.CompileRule(path), text: kind + " " + path, lead: spec.LiteralPrefix(path)}
}

func newBrokerPolicy(sb *spec.Sandbox) brokerPolicy {
	return aliasedBrokerPolicy(spec.WithAliases(sb))
}

// policy is the broker's policy of run: from the sandbox its plan worked
// the aliases out for (spec.Plan.Aliased), so that they are worked out
// once a run (each time reads every entry's links and the git configs).
func (run *linuxRun) policy() brokerPolicy {
	if run.specPlan != nil && run.specPlan.Aliased != nil {
		return aliasedBrokerPolicy(run.specPlan.Aliased)
	}
	return newBrokerPolicy(run.eff)
}

// aliasedBrokerPolicy is newBrokerPolicy of a sandbox WithAliases made.
func aliasedBrokerPolicy(sb *spec.Sandbox) brokerPolicy {
	p := brokerPolicy{capped: sb.Limits.CPUs > 0}
	for _, d := range sb.Deny {
		p.rules = append(p.rules, newBrokerRule("deny", d))
	}
	if sb.StrictDeny {
		// The system's secrets are masked like deny paths; a host that
		// renames over one (passwd rewrites /etc/shadow so) lifts the mask.
		for _, d := range spec.SystemSecrets(sb) {
			p.rules = append(p.rules, newBrokerRule("deny", d))
		}
	}
	for _, d := range sb.Protect {
		p.rules = append(p.rules, newBrokerRule("protect", d))
	}
	return p
}

// Refuse returns "deny PATH" or "protect PATH" for the entry that forbids
// changing path.
func (p brokerPolicy) Refuse(path string) string {
	for i := range p.rules {
		if p.rules[i].match.MatchUnder(path) {
			return p.rules[i].text
		}
	}
	return ""
}

// KeepAwake is broker.AwakePolicy: no keeper for a sandbox with a CPU
// limit, whose command would otherwise make the supervisor spin outside
// the limit by calling at a trickle.
func (p brokerPolicy) KeepAwake() bool { return !p.capped }

// Leads returns "deny PATH" or "protect PATH" for the entry whose path (a
// pattern's literal prefix) lies strictly below p: a symlink at p would
// send the host's later writes there elsewhere (see broker.LeadPolicy).
func (p brokerPolicy) Leads(path string) string {
	under := strings.TrimSuffix(path, "/") + "/"
	for i := range p.rules {
		if strings.HasPrefix(p.rules[i].lead, under) {
			return p.rules[i].text
		}
	}
	return ""
}

// RefuseRead returns "deny PATH" for the deny entry that forbids reading
// path: protected paths stay readable.
func (p brokerPolicy) RefuseRead(path string) string {
	for i := range p.rules {
		if p.rules[i].kind == "deny" && p.rules[i].match.MatchUnder(path) {
			return p.rules[i].text
		}
	}
	return ""
}

// brokerCreds are the ids the broker acts with: a root run's command's
// own (with no capabilities, as the command); a rootless run acts as the
// caller, who is the command on the host.
func (run *linuxRun) brokerCreds() broker.Creds {
	if run.r.rootless || run.oci.Process == nil {
		return broker.Creds{}
	}
	u := run.oci.Process.User
	c := broker.Creds{Set: true, UID: int(u.UID), GID: int(u.GID)}
	for _, g := range u.AdditionalGids {
		c.Groups = append(c.Groups, int(g))
	}
	return c
}

// brokerLink is cordon's end of the socket the sandbox's init sends its
// seccomp listener over, and the broker once it arrived.
type brokerLink struct {
	mine, theirs *os.File
	mu           sync.Mutex
	b            *broker.Broker
	denials      []broker.Denial
	serving      atomic.Bool // serve was called: done will be closed
	done         chan struct{}
	err          error
}

func newBrokerLink() (*brokerLink, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("broker socket: %w", err)
	}
	return &brokerLink{mine: os.NewFile(uintptr(fds[0]), "broker"), theirs: os.NewFile(uintptr(fds[1]), "broker-init"), done: make(chan struct{})}, nil
}

// serve waits for the listener on conn (l.mine, or a session's control
// socket) and serves it with policy p. It ends when the init closed its end
// without sending one (it failed; it reports why).
func (l *brokerLink) serve(conn *os.File, p broker.Policy, c broker.Creds) {
	l.serving.Store(true)
	defer close(l.done)
	fd, err := recvListener(conn)
	if l.mine != nil {
		l.mine.Close()
	}
	if err != nil {
		l.err = err
		return
	}
	l.mu.Lock()
	l.b = broker.Start(fd, p, c)
	l.mu.Unlock()
}

// stop ends the broker (the sandbox is gone) and returns its denials. It
// may be called again: the later calls return the same denials.
func (l *brokerLink) stop() []broker.Denial {
	if l.theirs != nil {
		l.theirs.Close()
	}
	if !l.serving.Load() {
		return nil
	}
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b != nil {
		l.b.Stop()
		l.denials = l.b.Denials()
		l.b = nil
	}
	return l.denials
}

// recvListener reads the one byte "L" and the descriptor the init sends.
func recvListener(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("broker: %w", err)
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN && rerr != unix.EINTR
	})
	if err == nil {
		err = rerr
	}
	{
		if err != nil {
			return -1, fmt.Errorf("broker: %w", err)
		}
		if n != 1 || buf[0] != 'L' {
			return -1, errors.New("broker: the init sent no seccomp listener")
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return -1, errors.New("broker: no descriptor with the listener message")
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return -1, errors.New("broker: no descriptor with the listener message")
		}
		return fds[0], nil
	}
}

// brokerDenials explains a failure by the broker's own record of what it
// refused: the exact path, whatever the command printed (or did not).
func brokerDenials(d []broker.Denial) runner.Explainer {
	return func(_ runner.Outcome, res *runner.Result) bool {
		if len(d) == 0 {
			return false
		}
		first := d[0]
		what := "may read it but never create, change, rename or remove it"
		switch {
		case strings.HasPrefix(first.Rule, "deny "):
			what = "may never read, create, change, rename or remove it"
		case first.Rule == broker.Busy:
			what = "may try again once the other process lets go of the directory's lock"
		}
		detail := fmt.Sprintf("%s of %s was refused by the sandbox's %s: the command %s", first.Op, first.Path, first.Rule, what)
		if n := len(d) - 1; n > 0 {
			detail += fmt.Sprintf(" (and %d more refused", n)
			if n > 1 {
				detail += " calls)"
			} else {
				detail += " call)"
			}
		}
		*res = runner.Denied(*res, runner.Denial{Path: first.Path, Detail: detail})
		return true
	}
}
