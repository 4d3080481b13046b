package decide

import "io/fs"

// Entry is what a Dir reports of a name, without following it.
type Entry struct {
	// Type is the file type bits: 0 for a regular file, fs.ModeDir,
	// fs.ModeSymlink, or another type bit.
	Type fs.FileMode
	// UID owns it.
	UID uint32
	// Dev and Ino identify it (the broker remembers the configs it
	// wrote by them).
	Dev, Ino uint64
}

// Dir is the directory a name is made in, as the writer holds it (a
// directory descriptor): the decisions look at the names beside the one
// made, never at a path string the sandbox could change meanwhile.
type Dir interface {
	// Lstat describes name in the directory without following it; an
	// error when it cannot (fs.ErrNotExist when absent).
	Lstat(name string) (Entry, error)
	// Names lists the directory name in it (not following a symlink).
	Names(name string) ([]string, error)
	// ReadFile reads up to limit bytes of the regular file name in it
	// (not following a symlink) and returns them with its mode; anything
	// but a regular file is an error.
	ReadFile(name string, limit int64) ([]byte, uint32, error)
	// Parent is the directory that holds this one, as the writer
	// resolves it: asked only for a name made in a "hooks" directory.
	Parent() (Dir, error)
}

// Rules are the writer's inputs to a decision.
type Rules struct {
	// Refuse is the writer's pattern decision: the deny or protect rule
	// that forbids changing the sandbox path p, or "".
	Refuse func(p string) string
	// Wrote reports whether the writer itself made the file e during
	// this run (the broker's copies of git's configs); nil: never.
	Wrote func(e Entry) bool
	// UID is the uid the writer acts as: a config of another user's is
	// refused rather than rewritten as someone else's.
	UID int
	// Resolve resolves a path git reads from a file the sandbox writes
	// (a gitdir line, a core.worktree) as the kernel does in the
	// sandbox's root (see GitFile and Worktree); nil refuses every such
	// path.
	Resolve Resolver
}

func (r Rules) refuse(p string) string {
	if r.Refuse == nil {
		return ""
	}
	return r.Refuse(p)
}

func (r Rules) wrote(e Entry) bool { return r.Wrote != nil && r.Wrote(e) }

// Verdict is a decision on one call.
type Verdict struct {
	// Rule is why the call is refused, or "" when it may go ahead.
	Rule string
	// Rewrite, when set, must be performed before the call: the config
	// the call makes a repository of, checked, written to a file of the
	// writer's own in the same directory and renamed over it, so that a
	// descriptor the sandbox kept open on the old one writes to a file no
	// longer there. A writer that cannot refuses the call.
	Rewrite *Rewrite
}

// Rewrite is a config to replace through a copy of the writer's own.
type Rewrite struct {
	// Name is the config's name in the directory decided on.
	Name string
	// Data is its content, which GitConfig took.
	Data []byte
	// Mode is its mode, to keep.
	Mode uint32
}

func refuse(rule string) Verdict { return Verdict{Rule: rule} }
