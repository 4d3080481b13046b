package cordon

import (
	"fmt"

	"github.com/cordon-run/cordon/runner"
)

// Overlay is the overlay the session's commands write to, or "" for a
// session in direct mode.
func (s *Session) Overlay() string { return s.overlay }

// Files returns the file tools (Read, Write, List, Check) over what the
// session's commands see. In direct mode that is the sandbox's Files. In
// an overlay the workspace is read and written through the session's own
// mount of it (its init's root, opened from /proc), so a file written is
// one the next command sees, and reads see what commands wrote; never
// through the upper layer on the host, which overlayfs leaves undefined
// to write while it is mounted. The rules are the sandbox's own, protect
// included, though commands in the overlay may write protect paths (they
// are held at apply): a file tool decides each call as in direct mode.
// done releases the view; call it when the calls are made.
func (s *Session) Files() (f *Files, done func(), err error) {
	if s.overlay == "" || s.sb.sb.Root == "" {
		return s.sb.files, func() {}, nil
	}
	sr, ok := s.rs.(runner.SessionRoot)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the file tools cannot reach overlay %s on this backend; fix: use the shell tool (a command) for its files", ErrUnsupported, s.overlay)
	}
	root, err := sr.OpenRoot()
	if err != nil {
		return nil, nil, fmt.Errorf("overlay %s: %w", s.overlay, err)
	}
	// /proc/self/fd/N follows to the session's root whatever the pid
	// does next; the workspace is at its own path in there.
	view := fmt.Sprintf("/proc/self/fd/%d%s", root.Fd(), s.sb.sb.Root)
	t, err := s.sb.table.View(view)
	if err != nil {
		root.Close() //nolint:errcheck,gosec // not used
		return nil, nil, err
	}
	return &Files{t: t, sb: s.sb.sb, log: s.sb.p.log}, func() { root.Close() }, nil //nolint:errcheck,gosec // a directory
}
