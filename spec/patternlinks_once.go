package spec

import (
	"reflect"
	"slices"
	"sync/atomic"
	"time"
)

// Links are the entries that hold a sandbox's deny and protect rules on
// what symlinks reach (withPatternLinks), found by one walk, with the
// sandbox and the host system directories they were found for. A front
// end that walked for its mount table (FindLinks) hands them to the
// plan of the run it starts (RunOptions.Links), which then does not walk
// the workspace again.
//
// They hold for exactly the sandbox they were found for: the walk reads
// only the sandbox (its deny and protect lists, zones, aliases, the git
// files GitProtect reads below its paths) and the system directories, so
// a plan of a sandbox deeply equal to that one, with the same system
// directories, gets the same entries from the same files; any other
// sandbox (an overlay's, a derived child's, one a backend narrowed) is
// walked again. How old they may be is the front end's choice (the
// files may change after the walk, as after any walk before the start).
type Links struct {
	sb            *Sandbox
	system        []string
	at            time.Time
	deny, protect []string
}

// linkWalks counts the walks withPatternLinks made (LinkWalks).
var linkWalks atomic.Int64

// LinkWalks returns how many times this process walked the directories
// below deny and protect rules for the links they reach: a test's check
// that a run walks once.
func LinkWalks() int64 { return linkWalks.Load() }

// FindLinks walks sb's directories for what its deny and protect rules
// reach through symlinks (PatternLinks), and returns the entries with
// what they hold for.
func FindLinks(sb *Sandbox) (*Links, error) { return findLinks(sb, SystemDirs(sb)) }

func findLinks(sb *Sandbox, system []string) (*Links, error) {
	c, err := withPatternLinks(sb, system, nil)
	if err != nil {
		return nil, err
	}
	return &Links{sb: sb.Clone(), system: system, at: time.Now(),
		deny: c.Deny[len(sb.Deny):], protect: c.Protect[len(sb.Protect):]}, nil
}

// Entries returns the deny and protect entries the links add (sandbox
// paths without their aliases), as PatternLinks returns them.
func (l *Links) Entries() (deny, protect []string) {
	return slices.Clone(l.deny), slices.Clone(l.protect)
}

// Age is how long ago the walk was made.
func (l *Links) Age() time.Duration { return time.Since(l.at) }

// For reports whether the links hold for sb: found for a sandbox deeply
// equal to it, with the host system directories it shows now. A nil
// Links holds for none.
func (l *Links) For(sb *Sandbox) bool {
	return l != nil && sb != nil && l.forPlan(sb, SystemDirs(sb))
}

// forPlan reports whether the links hold for sb with the host system
// directories systemDirs.
func (l *Links) forPlan(sb *Sandbox, systemDirs []string) bool {
	return l != nil && sb != nil && slices.Equal(l.system, systemDirs) && reflect.DeepEqual(l.sb, sb)
}
