package broker

import (
	"path"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/decide"
)

// Directories git takes for a repository (HEAD, objects and refs, whatever
// their name) are guarded by package decide's shape rules, which the file
// tools ask too; the broker holds decide.Lock and the cross-process lock
// of the directory decided on around each decision and the call it
// decides (bareLock, see xlock_linux.go), and performs the one side effect a rule has: a
// config a completed shape takes is rewritten through a copy of the
// broker's own (so that a descriptor the command kept open on it writes
// to a file no longer there), and remembered as the broker's.

const bareRule = decide.ShapeRule

// rules are the broker's inputs to the decisions of package decide.
func (b *Broker) rules() decide.Rules {
	return decide.Rules{Refuse: b.policy.Refuse, Wrote: b.git.wroteEntry, UID: unix.Geteuid(), Resolve: b.rootResolver()}
}

// dirAt is the directory l's name is made in, for package decide; its
// parent is resolved in the sandbox's view (a hooks directory's).
func dirAt(c *call, l loc) decide.Dir {
	return decide.FD{Dirfd: l.dir, Up: func() (decide.Dir, error) {
		up, err := c.atFull(path.Dir(l.path))
		if err != nil {
			return nil, err
		}
		return decide.FD{Dirfd: up.dir}, nil
	}}
}

// bareMake decides a name the command makes at l (a file, a directory
// when mkdir, a symlink, a link, a rename's target), under bareLock, and
// rewrites the config a completed shape takes. It returns the rule that
// refuses it, or "".
func (b *Broker) bareMake(c *call, l loc, mkdir bool) string {
	v := decide.Make(b.rules(), dirAt(c, l), l.path, mkdir)
	if v.Rule != "" || v.Rewrite == nil {
		return v.Rule
	}
	cfg := loc{dir: l.dir, name: v.Rewrite.Name, path: path.Join(path.Dir(l.path), v.Rewrite.Name)}
	nst, err := writeConfigCopy(cfg, v.Rewrite.Data, v.Rewrite.Mode)
	if err != nil {
		return bareRule + ": its config could not be rewritten"
	}
	b.git.remember(nst)
	return ""
}

// bareWrite decides an open for writing (or a truncate) of the existing
// file at l, under bareLock.
func (b *Broker) bareWrite(c *call, l loc) string {
	return decide.Write(b.rules(), dirAt(c, l), l.path)
}

// lockedMake takes the decisions' lock for a name made at l (bareLock)
// and decides it (bareOK): ok false returns r, the call's result, with
// the lock released; ok true leaves unlock to the caller.
func (b *Broker) lockedMake(c *call, op string, l loc, mkdir bool) (unlock func(), r result, ok bool) {
	unlock, r, locked := b.bareLock(c, op, l)
	if !locked {
		return nil, r, false
	}
	if !b.bareOK(c, op, l, mkdir) {
		unlock()
		return nil, fail(unix.EACCES), false
	}
	return unlock, result{}, true
}

// bareOK decides a name made at l (see bareMake; the caller holds
// bareLock) and records a refusal.
func (b *Broker) bareOK(c *call, op string, l loc, mkdir bool) bool {
	if !decide.Relevant(l.path) {
		return true
	}
	if rule := b.bareMake(c, l, mkdir); rule != "" {
		b.deny(op, l.path, rule)
		return false
	}
	return true
}

// bareWriteOK decides a write to the existing file at sandbox path p (see
// bareWrite) and records a refusal.
func (b *Broker) bareWriteOK(c *call, op, p string) bool {
	if !decide.Relevant(p) {
		return true
	}
	l, err := c.atFull(p)
	if err != nil {
		return true // no such name: nothing of a repository's to write
	}
	if rule := b.bareWrite(c, l); rule != "" {
		b.deny(op, p, rule)
		return false
	}
	return true
}
