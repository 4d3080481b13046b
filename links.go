package cordon

import (
	"time"

	"github.com/cordon-run/cordon/spec"
)

// linkReuseAge is how old the walk for what deny and protect reach
// through symlinks (spec.Links) that a Sandbox's mount table made may be
// for a run, a session or a derived Sandbox to take its entries rather
// than walk again: a command's start (`cordon run`, which builds the
// Sandbox, derives it by its flags and runs it within milliseconds)
// walks once. The entries are a snapshot of the workspace either way (a
// link made after the walk, before the sandbox is up, is not held by
// either walk); the bound keeps the snapshot from being older than about
// a start's own length, so a long-lived Sandbox (the MCP server's, one a
// program keeps) walks afresh for every run, as before.
const linkReuseAge = time.Second

// recentLinks returns the entries s's mount table found on what deny and
// protect reach through symlinks, when they are recent enough to reuse
// (linkReuseAge), else nil. The taker uses them only for the sandbox
// they were found for (spec.Links.For): any other (an overlay's, a
// derived child that differs, one a backend narrowed) walks again.
func (s *Sandbox) recentLinks() *spec.Links {
	l := s.table.Links()
	if l == nil || l.Age() > linkReuseAge {
		return nil
	}
	return l
}
