package linux

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/spec"
)

// The deny watcher narrows what a host can show the sandbox under a denied
// name. A denied path is hidden by a mount over what was there when the
// sandbox was built; a file the host creates there later, or renames over
// it (`mv .env.tmp .env`, which detaches the mount over the old file), is
// not hidden. Without strict_deny reads stay in the kernel, so the
// supervisor watches, with inotify, the host directories that can receive
// a denied name, and covers a new match inside the sandbox's mount
// namespace as it appears (denycover_linux.c), before or while the host
// writes into it.
//
// inotify, not fanotify: fanotify's marks on a whole mount or filesystem
// (which would reach every ** match without a walk) need CAP_SYS_ADMIN in
// the initial user namespace, so a rootless run could not have them, and
// its unprivileged mode offers only inode marks, as inotify does, with
// events named by file handles that only a privileged process can open.
//
// Events: IN_CREATE and IN_MOVED_TO are the moments a name appears (a
// create, mkdir, link, symlink, mknod, or a rename into the directory);
// the cover goes over the name at once, so what the host writes into the
// file afterwards (IN_CLOSE_WRITE) lands under it already. IN_MOVED_FROM
// of a directory drops the watches below it (their paths are stale); its
// IN_MOVED_TO elsewhere walks it again. IN_Q_OVERFLOW walks everything
// again. IN_IGNORED forgets a watch the kernel dropped.

// denyWatchLimit bounds the directories one sandbox's watcher watches: a
// ** pattern is walked breadth first from its literal prefix, so the
// shallowest directories are watched first, and a directory found beyond
// the bound, or once the user's inotify watches run out
// (fs.inotify.max_user_watches), is not: a denied name the host makes
// below it is readable until the run ends, as without the watcher. A
// watch costs the kernel about a kilobyte.
const denyWatchLimit = 16384

// denyWatchMask are the events a watched directory reports.
const denyWatchMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// errDenyWatch marks what stops the deny watcher from covering a denied
// name the host made (the sandbox is then ended). It lives here, not in
// errors.go: only Linux has the watcher.
var errDenyWatch = errors.New("deny watch")

// watchedDir is one sandbox directory a watch stands for, and its host
// path (several when the sandbox shows one host directory at several
// paths).
type watchedDir struct{ sandbox, host string }

// denyWatcher watches one sandbox's deny paths (see above).
type denyWatcher struct {
	sb     *spec.Sandbox
	rules  []denyRule
	starts []string
	in     *os.File
	fd     int // in's descriptor: Fd() would make in blocking, and Close could not end a read
	cov    *denyCoverer
	fail   func(error)

	// walked brings the result of the walk prepare started; pending are
	// the matches it met before the helper existed; looping: loop runs.
	walked  chan error
	pending []string
	looping bool
	// readAt is when loop read the events it handles (for the log).
	readAt time.Time

	mu     sync.Mutex // the maps, between the walk at start and the loop
	wds    map[int32][]watchedDir
	byPath map[string]int32
	full   bool
	done   chan struct{}
}

// denyNearZone reports whether a deny entry (a pattern by its literal
// prefix), as written or with its symlinks resolved, lies in or above the
// workspace or a mount, at its source or its target: only then can the
// host make a denied name the sandbox shows. A cheap test before the
// aliases are worked out (spec.WithAliases reads every entry's links and
// the git configs), which every run with only the trust store denied
// would otherwise pay.
func denyNearZone(sb *spec.Sandbox) bool {
	var zones []string
	add := func(p string) {
		if p == "" {
			return
		}
		zones = append(zones, p)
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			zones = append(zones, r)
		}
	}
	add(sb.Root)
	for _, m := range sb.Mounts {
		add(m.Source)
		add(m.Target)
	}
	if sb.System.Kind == spec.SystemRootfs {
		return true
	}
	near := func(a, b string) bool {
		return a == b || b == "/" || a == "/" || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
	}
	for _, d := range sb.Deny {
		start := d
		if spec.IsPattern(d) {
			start = spec.LiteralPrefix(d)
		}
		forms := []string{start}
		for a := start; a != "/" && a != "."; a = filepath.Dir(a) {
			if r, err := filepath.EvalSymlinks(a); err == nil {
				if r != a {
					forms = append(forms, filepath.Join(r, strings.TrimPrefix(start, a)))
				}
				break
			}
		}
		for _, f := range forms {
			for _, z := range zones {
				if near(f, z) {
					return true
				}
			}
		}
	}
	return false
}

// newDenyWatcher returns the watcher of sb's deny entries (aliases
// included), or nil when sb has none, strict_deny holds them, or none lies
// where the sandbox shows a host directory (every run denies cordon's
// trust store, which a sandbox rarely shows): such a run starts nothing.
func newDenyWatcher(sb *spec.Sandbox) *denyWatcher {
	return newAliasedDenyWatcher(sb, nil)
}

// newAliasedDenyWatcher is newDenyWatcher with the aliases of sb already
// worked out (the run's spec.Plan.Aliased), so that a run works them out
// once; aliased nil works them out here.
func newAliasedDenyWatcher(sb, aliased *spec.Sandbox) *denyWatcher {
	if sb.StrictDeny || len(sb.Deny) == 0 || !denyNearZone(sb) {
		return nil
	}
	if aliased == nil {
		aliased = spec.WithAliases(sb)
	}
	// The directories a mount shows, not the links its source names: the
	// walk does not follow a link.
	sb = spec.WithResolvedSources(aliased)
	w := &denyWatcher{sb: sb, wds: map[int32][]watchedDir{}, byPath: map[string]int32{}, done: make(chan struct{})}
	for _, d := range sb.Deny {
		w.rules = append(w.rules, newDenyRule(d))
	}
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			w.starts = append(w.starts, s)
		}
	}
	for _, d := range sb.Deny {
		start := filepath.Dir(d)
		if spec.IsPattern(d) {
			start = spec.LiteralPrefix(d)
		}
		if _, ok := spec.HostPath(sb, start); ok {
			add(start)
			continue
		}
		// The host shows nothing at start itself, but a workspace or a
		// mount below it may hold a match ("/home/u/*/.env" and the
		// workspace /home/u/proj).
		for _, t := range zoneTargets(sb) {
			if t != start && (start == "/" || strings.HasPrefix(t, start+"/")) && spec.MayMatchBelow(d, t) {
				add(t)
			}
		}
	}
	if len(w.starts) == 0 {
		return nil
	}
	return w
}

// zoneTargets are the sandbox paths of the workspace and the mounts.
func zoneTargets(sb *spec.Sandbox) []string {
	var out []string
	if sb.Root != "" {
		out = append(out, sb.Root)
	}
	for _, m := range sb.Mounts {
		t := m.Target
		if t == "" {
			t = m.Source
		}
		out = append(out, t)
	}
	return out
}

// prepare opens the watcher's inotify instance and walks in the
// background while the sandbox's init is set up: the walk adds the watches
// and notes the matches it meets, which arm covers.
func (w *denyWatcher) prepare() error {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("inotify (fs.inotify.max_user_instances; or set strict_deny: true): %w", err)
	}
	w.fd, w.in = fd, os.NewFile(uintptr(fd), "deny-watch")
	w.walked = make(chan error, 1)
	go func() { w.walked <- w.walkAll() }()
	return nil
}

// arm starts the cover helper in the namespaces of the sandbox's init pid,
// covers what the walk found that the sandbox sees uncovered (what the
// host made since the build), then follows the host's changes until stop.
// fail is called (once) when a later match cannot be covered: the caller
// ends the sandbox.
func (w *denyWatcher) arm(pid int, fail func(error)) error {
	err := <-w.walked
	w.walked = nil
	if err != nil {
		return err
	}
	if w.cov, err = startDenyCoverer(pid); err != nil {
		return fmt.Errorf("the deny cover helper: %w", err)
	}
	var once sync.Once
	w.fail = func(err error) { once.Do(func() { fail(err) }) }
	for _, p := range w.pending {
		if err := w.cover(p); err != nil {
			return err
		}
	}
	w.pending = nil
	logrus.WithFields(logrus.Fields{"dirs": len(w.byPath), "entries": len(w.rules)}).Debug("deny watch: armed")
	w.looping = true
	go w.loop()
	return nil
}

// denyWalk prepares the deny watcher of the run's sandbox, when it has deny
// paths and no strict_deny: its walk runs while the sandbox's init starts.
func (run *linuxRun) denyWalk() error {
	var aliased *spec.Sandbox
	if run.specPlan != nil {
		aliased = run.specPlan.Aliased
	}
	w := newAliasedDenyWatcher(run.eff, aliased)
	if w == nil {
		return nil
	}
	if err := w.prepare(); err != nil {
		return err
	}
	run.denyW = w
	run.onEnd(w.stop)
	return nil
}

// denyWatch arms the deny watcher: a started step, so what the host made
// since the build is covered before the command runs. A match that cannot
// be covered later ends the sandbox.
func (run *linuxRun) denyWatch() error {
	if run.denyW == nil {
		return nil
	}
	pid, err := run.lp.Pid()
	if err != nil {
		return fmt.Errorf("the sandbox's init: %w", err)
	}
	c := run.container
	return run.denyW.arm(pid, func(err error) {
		logrus.WithError(err).Error("a denied path the host made mid-run could not be hidden; ending the sandbox")
		killAll(c)
	})
}

// stop ends the watcher and its helper.
func (w *denyWatcher) stop() {
	if w.walked != nil {
		<-w.walked
	}
	w.in.Close()
	if w.looping {
		<-w.done
	}
	if w.cov != nil {
		w.cov.close()
	}
}

func (w *denyWatcher) walkAll() error {
	for _, s := range w.starts {
		// From the deepest directory that exists: the path below it
		// appears later, and its events lead the walk there.
		for {
			h, ok := spec.HostPath(w.sb, s)
			if !ok {
				break
			}
			if fi, err := os.Lstat(h); err == nil && fi.IsDir() {
				if err := w.walk(s); err != nil {
					return err
				}
				break
			}
			if s == "/" {
				break
			}
			s = filepath.Dir(s)
		}
	}
	return nil
}

// denyRule is one deny entry, prepared for the walk, which meets every
// name below a pattern's literal prefix: most are refused on their last
// component alone, without building their path.
type denyRule struct {
	text  string
	match spec.Rule
	// last is the entry's last component ("" when it is "**", which any
	// name may end).
	last string
	// prefix and anyDir: every directory below prefix may hold a match
	// (the pattern goes on with "**" there).
	prefix string
	anyDir bool
}

func newDenyRule(d string) denyRule {
	r := denyRule{text: d, match: spec.CompileRule(d), last: path.Base(d)}
	if r.last == "**" {
		r.last = ""
	}
	if spec.IsPattern(d) {
		r.prefix = spec.LiteralPrefix(d)
		rest := strings.TrimPrefix(strings.TrimPrefix(d, r.prefix), "/")
		r.anyDir = strings.HasPrefix(rest, "**/") || rest == "**"
	}
	return r
}

// nameMay reports whether a name may match the entry's last component.
func (r *denyRule) nameMay(name string) bool {
	if r.last == "" || r.last == name {
		return true
	}
	ok, _ := path.Match(r.last, name)
	return ok
}

// matched returns the deny entry that holds name in the sandbox directory
// dir, or "".
func (w *denyWatcher) matched(dir, name string) string {
	p := ""
	for i := range w.rules {
		r := &w.rules[i]
		if !r.nameMay(name) {
			continue
		}
		if p == "" {
			p = filepath.Join(dir, name)
		}
		if r.match.MatchUnder(p) {
			return r.text
		}
	}
	return ""
}

// reaches reports whether a deny entry may match something below the
// sandbox directory p.
func (w *denyWatcher) reaches(p string) bool {
	for i := range w.rules {
		r := &w.rules[i]
		if r.anyDir && (p == r.prefix || strings.HasPrefix(p, r.prefix+"/") || r.prefix == "/") {
			return true
		}
		if spec.MayMatchBelow(r.text, p) {
			return true
		}
	}
	return false
}

// walk watches the sandbox directory root and, breadth first, every
// directory below it that a deny entry may reach, and covers every match
// it finds there. The watch is added before a directory is read, so a name
// made meanwhile is either read or reported.
func (w *denyWatcher) walk(root string) error {
	queue := []string{root}
	buf := make([]byte, 32*1024)
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		host, ok := spec.HostPath(w.sb, d)
		if !ok || !w.watch(d, host) {
			continue
		}
		err := scanDir(host, buf, func(name string, isDir bool) error {
			if w.matched(d, name) != "" {
				return w.cover(filepath.Join(d, name))
			}
			if isDir {
				if p := filepath.Join(d, name); w.reaches(p) {
					queue = append(queue, p)
				}
			}
			return nil
		})
		var gone *scanError
		if err != nil && !errors.As(err, &gone) {
			return err
		}
		// A directory gone or unreadable shows nothing of the host now.
	}
	return nil
}

// watch adds the inotify watch of sandbox directory d (host path host) and
// reports whether d is watched.
func (w *denyWatcher) watch(d, host string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.byPath[d]; !ok && len(w.byPath) >= denyWatchLimit {
		if !w.full {
			w.full = true
			logrus.WithField("dir", d).Warnf("deny watch: more than %d directories; a denied name the host makes in this one "+
				"is not covered until the run ends (strict_deny: true holds it)", denyWatchLimit)
		}
		return false
	}
	wd, err := unix.InotifyAddWatch(w.fd, host, denyWatchMask)
	if errors.Is(err, unix.ENOSPC) && !w.full {
		w.full = true
		logrus.WithField("dir", d).Warn("deny watch: the user's inotify watches ran out (fs.inotify.max_user_watches); a denied name the host makes " +
			"below this directory is not covered until the run ends (strict_deny: true holds it)")
	}
	if err != nil {
		logrus.WithError(err).WithField("dir", host).Debug("deny watch")
		return false
	}
	id := int32(wd)
	w.byPath[d] = id
	for _, x := range w.wds[id] {
		if x.sandbox == d {
			return true
		}
	}
	w.wds[id] = append(w.wds[id], watchedDir{d, host})
	return true
}

// cover covers sandbox path p in the sandbox if the host shows a file
// there that the sandbox sees uncovered.
func (w *denyWatcher) cover(p string) error {
	if w.cov == nil {
		w.pending = append(w.pending, p)
		return nil
	}
	host, ok := spec.HostPath(w.sb, p)
	if !ok {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Lstat(host, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil // gone (its replacement has an event of its own), or a symlink, which names another path
	}
	status, err := w.cov.cover(p, st.Dev, st.Ino)
	if err != nil {
		return fmt.Errorf("%w: %s (deny %s): %w", errDenyWatch, p, w.matched(filepath.Dir(p), filepath.Base(p)), err)
	}
	logrus.WithFields(logrus.Fields{"path": p, "covered": status == denyCovered, "status": status,
		"after_event": time.Since(w.readAt)}).Debug("deny watch")
	return nil
}

// loop reads the watcher's events until stop closes its descriptor.
func (w *denyWatcher) loop() {
	defer close(w.done)
	buf := make([]byte, 64*1024)
	for {
		n, err := w.in.Read(buf)
		w.readAt = time.Now()
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !errors.Is(err, fs.ErrClosed) {
				w.fail(fmt.Errorf("%w: read events: %w", errDenyWatch, err))
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if err := w.event(ev.Wd, ev.Mask, cString(name)); err != nil {
				w.fail(err)
			}
		}
	}
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// event handles one inotify event.
func (w *denyWatcher) event(wd int32, mask uint32, name string) error {
	switch {
	case mask&unix.IN_Q_OVERFLOW != 0:
		logrus.Debug("deny watch: events lost, walking again")
		return w.walkAll()
	case mask&unix.IN_IGNORED != 0:
		w.forget(wd)
		return nil
	}
	w.mu.Lock()
	dirs := append([]watchedDir(nil), w.wds[wd]...)
	w.mu.Unlock()
	for _, d := range dirs {
		p := filepath.Join(d.sandbox, name)
		switch {
		case mask&unix.IN_MOVED_FROM != 0:
			if mask&unix.IN_ISDIR != 0 {
				w.unwatchBelow(p)
			}
		case w.matched(d.sandbox, name) != "":
			if err := w.cover(p); err != nil {
				return err
			}
		case mask&unix.IN_ISDIR != 0 && w.reaches(p):
			if err := w.walk(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// forget drops a watch the kernel removed (its directory is gone).
func (w *denyWatcher) forget(wd int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.wds[wd] {
		if w.byPath[d.sandbox] == wd {
			delete(w.byPath, d.sandbox)
		}
	}
	delete(w.wds, wd)
}

// unwatchBelow removes the watches of sandbox directory p and of those
// below it: p was renamed away, so their paths no longer name them.
func (w *denyWatcher) unwatchBelow(p string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for d, wd := range w.byPath {
		if d == p || (len(d) > len(p) && d[:len(p)] == p && d[len(p)] == '/') {
			delete(w.byPath, d)
			delete(w.wds, wd)
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
		}
	}
}
