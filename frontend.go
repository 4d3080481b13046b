package cordon

import (
	"github.com/cordon-run/cordon/darwin"
	"github.com/cordon-run/cordon/spec"
)

// What the front ends (the cordon command, the MCP server) need beyond
// the harness's calls: flags that adjust a sandbox, attachments without a
// worker, and the record of a server that starts.

// Override returns s adjusted by a front end's flags (spec.Overrides): on
// the top-level sandbox they may change it freely, on a derived one only
// narrow it. The control files stay out of reach. A refusal is recorded
// like any other.
func (s *Sandbox) Override(o spec.Overrides) (*Sandbox, error) {
	c := s.git.without(s.sb)
	if err := o.Apply(c); err != nil {
		return nil, s.refuse(err)
	}
	spec.GuardControlFiles(c, []string{s.p.cfg.Source}, append(append([]string(nil), s.p.logPaths...), s.p.guarded...))
	return s.p.newSandbox(c, s.git.read, s.recentLinks())
}

// AttachFiles returns s with paths, files s can read, shown read-only at
// the same paths: what Attach does for a derived worker, for the sandbox
// itself. The attachment policy (AttachPolicy, else
// DefaultAttachmentPolicy) caps them; a refusal is recorded.
func (s *Sandbox) AttachFiles(paths []string, opts ...DeriveOption) (*Sandbox, error) {
	c := deriveConfig{policy: DefaultAttachmentPolicy()}
	for _, o := range opts {
		o(&c)
	}
	c.attach = append(c.attach, paths...)
	child, err := s.attach(s.sb.Clone(), c)
	if err != nil {
		return nil, s.refuse(err)
	}
	out, err := s.p.newSandbox(child, nil, s.recentLinks())
	if err != nil {
		return nil, err
	}
	out.git = s.git // already in child
	return out, nil
}

// Serving records that a front end starts serving s's tools (the MCP
// server). It fails when the audit log cannot take the record: it could
// not take the runs either, so the caller must not serve.
func (s *Sandbox) Serving() error { return s.p.log.Serve(s.sb) }

// SeatbeltProfile renders the macOS Seatbelt profile the darwin backend
// would apply to s, on any OS (cordon spec --platform darwin); tag names
// the profile's denials.
func (s *Sandbox) SeatbeltProfile(tag string) (string, error) {
	return darwin.Profile(s.sb, darwin.ProfileOptions{Tag: tag})
}
