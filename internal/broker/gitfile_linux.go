package broker

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/decide"
)

// A ".git" that is a file ("gitdir: PATH") or a symlink sends git to
// another directory for its hooks and config: a redirect the sandbox could
// point at a directory no rule guards, which it then fills with a hook or
// a core.fsmonitor for the host's next git to run. So:
//
//   - no symlink is made at a ".git" name or at or below a ".git"
//     directory's modules or worktrees (git makes none there; a symlinked
//     .git/modules would send a submodule's gitdir elsewhere), nor renamed
//     there, nor is a ".git" name hard-linked;
//   - a ".git" file the command writes (git submodule, clone
//     --separate-git-dir) is written to an unnamed file (O_TMPFILE) the
//     command holds, and published by the broker: once its content is
//     complete ("gitdir: PATH" and a newline, or the run's end), the
//     broker checks where it points and, only if the hooks, config and
//     commondir there are guarded, writes that content to a file of its
//     own, which the command never held, and renames it to ".git".
//     Content that is no redirect is published as is (git refuses it).
//     Until then the name does not exist; a refused one never does, and
//     the refusal is recorded with its path.

// gitLinkName reports whether p names a ".git".
func gitLinkName(p string) bool { return path.Base(p) == ".git" }

// gitProbeSymlink reports whether a symlink at p with target target can
// redirect nothing: git's probe of the file system in a new gitdir (a
// symlink "tXXXXXX" -> "testing" in .git/modules/NAME) points, without
// "..", to a place that is itself below a .git directory's modules or
// worktrees, which the patterns guard wherever it leads.
func gitProbeSymlink(p, target string) bool {
	if gitLinkName(p) || target == "" || strings.HasPrefix(target, "/") {
		return false
	}
	for _, c := range strings.Split(target, "/") {
		if c == ".." {
			return false
		}
	}
	to := path.Dir(p) + "/" + target
	return strings.Contains(to, "/.git/modules/") || strings.Contains(to, "/.git/worktrees/")
}

// pendingGitFile is a ".git" file the command is writing, not yet
// published.
type pendingGitFile struct {
	op   string
	dir  int // O_PATH descriptor of the directory it goes in
	root int // the writer's root, to resolve the gitdir in its view
	name string
	path string // sandbox path
	fd   int    // the broker's descriptor of the unnamed file
	mode uint32
	// trackers are the writer's exec trackers, for an Observer.
	trackers []uint64
}

// gitFiles are the pending ".git" files; n is their count, read without
// the lock on every call.
type gitFiles struct {
	mu      sync.Mutex
	n       atomic.Int32
	pending []*pendingGitFile
}

// openGitFile answers an open for writing of the ".git" file at l: the
// caller gets an unnamed file in the same directory (with the existing
// content unless it truncates), which the broker publishes later.
func (b *Broker) openGitFile(c *call, op string, l loc, flags int, mode uint32, existed bool) result {
	c.applyUmask()
	if existed {
		var st unix.Stat_t
		if unix.Fstatat(l.dir, l.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			mode = st.Mode & 0o777
		}
	}
	// Read-write whatever the caller asked: the broker reads it through
	// a duplicate.
	tmp, err := unix.Openat(l.dir, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC|(flags&unix.O_APPEND), mode&0o777)
	if err != nil {
		return fail(err)
	}
	own, err := unix.FcntlInt(uintptr(tmp), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		unix.Close(tmp)
		return fail(err)
	}
	var tst unix.Stat_t
	if unix.Fstat(tmp, &tst) == nil {
		mode = tst.Mode & 0o777
	}
	if existed && flags&unix.O_TRUNC == 0 {
		if err := copyInto(tmp, l); err != nil {
			unix.Close(tmp)
			unix.Close(own)
			return fail(err)
		}
		if flags&unix.O_APPEND == 0 {
			_, _ = unix.Seek(tmp, 0, io.SeekStart)
		}
	}
	root, err := c.rootFD()
	if err != nil {
		unix.Close(tmp)
		unix.Close(own)
		return fail(err)
	}
	p := &pendingGitFile{op: op, name: l.name, path: l.path, fd: own, mode: mode & 0o777}
	if _, obs := b.policy.(Observer); obs {
		p.trackers = trackers(c.pid)
	}
	p.dir, _ = unix.Dup(l.dir)
	p.root, _ = unix.Dup(root)
	b.gitFiles.mu.Lock()
	b.gitFiles.pending = append(b.gitFiles.pending, p)
	b.gitFiles.n.Store(int32(len(b.gitFiles.pending)))
	b.gitFiles.mu.Unlock()
	return result{fd: tmp, cloexec: flags&unix.O_CLOEXEC != 0}
}

func copyInto(dst int, l loc) error {
	src, err := unix.Openat(l.dir, l.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer unix.Close(src)
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(src, buf)
		if n <= 0 || err != nil {
			return err
		}
		if _, err := unix.Write(dst, buf[:n]); err != nil {
			return err
		}
	}
}

// publishGitFiles publishes the pending ".git" files whose content is
// complete; at the end (final) every one, complete or not.
func (b *Broker) publishGitFiles(final bool) {
	if b.gitFiles.n.Load() == 0 {
		return
	}
	b.gitFiles.mu.Lock()
	defer b.gitFiles.mu.Unlock()
	keep := b.gitFiles.pending[:0]
	for _, p := range b.gitFiles.pending {
		data := make([]byte, decide.MaxGitFile+1)
		n, err := unix.Pread(p.fd, data, 0)
		if err != nil {
			n = 0
		}
		data = data[:n]
		if !final && !gitFileComplete(data) {
			keep = append(keep, p)
			continue
		}
		b.publishGitFile(p, data)
		for _, fd := range []int{p.fd, p.dir, p.root} {
			unix.Close(fd)
		}
	}
	clear(b.gitFiles.pending[len(keep):])
	b.gitFiles.pending = keep
	b.gitFiles.n.Store(int32(len(keep)))
}

// gitFileComplete reports whether a ".git" file's content can be decided
// now: a redirect with its newline, or content that can never become one
// (another first byte than "gitdir: " has).
func gitFileComplete(data []byte) bool {
	const pre = "gitdir: "
	if len(data) == 0 {
		return false
	}
	if len(data) < len(pre) {
		return !strings.HasPrefix(pre, string(data))
	}
	return !strings.HasPrefix(string(data), pre) || strings.IndexByte(string(data), '\n') >= 0 || len(data) > decide.MaxGitFile
}

func (b *Broker) publishGitFile(p *pendingGitFile, data []byte) {
	if err := b.checkGitFile(p.root, p.path, data); err != nil {
		tr := p.trackers
		if tr == nil {
			tr = []uint64{}
		}
		b.denyFor(0, tr, p.op, p.path, "protect (a .git file from the sandbox: "+err.Error()+")")
		return
	}
	_ = b.writeOwnCopy(p.dir, p.name, data, p.mode)
}

// checkGitFile decides the content of the ".git" file at p by
// decide.GitFile, its gitdir resolved in root (the writer's) as the kernel
// resolves it (kernelPath).
func (b *Broker) checkGitFile(root int, p string, data []byte) error {
	r := b.rules()
	r.Resolve = resolverIn(root)
	return decide.GitFile(r, p, data)
}

// writeOwnCopy writes data to a new file of the broker's in dir and
// renames it to name: the command never held it.
func (b *Broker) writeOwnCopy(dir int, name string, data []byte, mode uint32) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".cordon-git-" + hex.EncodeToString(rnd[:])
	out, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return err
	}
	w := os.NewFile(uintptr(out), tmp)
	_, werr := w.Write(data)
	if werr == nil {
		werr = unix.Fchmod(out, mode&0o777)
	}
	w.Close()
	if werr != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return werr
	}
	if err := unix.Renameat(dir, tmp, dir, name); err != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return err
	}
	return nil
}

// renameGitFile performs rename(from, to) where to is a ".git" name and
// from a regular file: its content is decided as a ".git" file's and a
// copy of the broker's takes the name.
func (b *Broker) renameGitFile(c *call, op string, from, to loc) result {
	data, mode, err := readRenamed(from, decide.MaxGitFile+1)
	if err != nil {
		return fail(err)
	}
	root, err := c.rootFD()
	if err != nil {
		return fail(err)
	}
	if err := b.checkGitFile(root, to.path, data); err != nil {
		b.deny(op, to.path, "protect (a .git file from the sandbox: "+err.Error()+")")
		return fail(unix.EACCES)
	}
	if err := b.writeOwnCopy(to.dir, to.name, data, mode&0o777); err != nil {
		return fail(err)
	}
	return errResult(unix.Unlinkat(from.dir, from.name, 0))
}

// readRenamed reads up to limit bytes of the regular file a rename is
// about to publish under a git name, opened without following a link at
// its last component, and returns them with the file's mode. Anything but
// a regular file is EACCES.
func readRenamed(from loc, limit int64) ([]byte, uint32, error) {
	src, err := unix.Openat(from.dir, from.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	f := os.NewFile(uintptr(src), from.path)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(src, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, unix.EACCES
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, 0, err
	}
	return data, st.Mode, nil
}
