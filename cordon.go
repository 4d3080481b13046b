package cordon

import (
	"errors"
	"sync"

	runnerlinux "github.com/cordon-run/cordon/runner/linux"

	"github.com/sirupsen/logrus"

	"github.com/cordon-run/cordon/internal/attach"
	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// Init hands over to the sandbox's init when this process was re-executed as
// one, and never returns then. A program that runs commands with Run must
// call it first thing in main (and in TestMain): on Linux the backend
// starts each sandbox by re-executing the program itself.
func Init() { runnerlinux.Init() }

// Project is a loaded config: the top-level sandbox, the delegation policy
// and the audit log. It is the one place where a run is put together:
// every front end (the Go API, the cordon command, the MCP server) guards
// the control files, attaches, records and runs through it.
type Project struct {
	cfg    *spec.Config
	log    *audit.Log
	runner runner.Runner

	// Set by the options, read once by NewProject.
	via       string
	logPaths  []string
	auditWarn func(error)
	// guarded are other files cordon writes for the caller (the report),
	// kept out of every sandbox as the logs are.
	guarded []string
}

// ProjectOption adjusts a Project as it is loaded.
type ProjectOption func(*Project)

// Front ends named by WithFrontEnd, as the audit log records them.
const (
	FrontEndAPI = audit.ViaAPI
	FrontEndCLI = audit.ViaCLI
	FrontEndMCP = audit.ViaMCP
)

// WithAuditFile appends the audit log to path too, in addition to the
// config's own `audit:` file; "" adds nothing. The file is out of the
// sandbox's reach, as the config's is.
func WithAuditFile(path string) ProjectOption {
	return func(p *Project) {
		if path != "" {
			p.logPaths = append(p.logPaths, path)
			spec.GuardControlFiles(&p.cfg.Sandbox, nil, []string{path})
		}
	}
}

// WithFrontEnd names the front end in the audit records (default
// FrontEndAPI).
func WithFrontEnd(name string) ProjectOption {
	return func(p *Project) { p.via = name }
}

// WithAuditWarning passes a record that could not be written to warn, when
// the config makes the audit log best effort (`audit_required: false`);
// by default it is logged as a warning.
func WithAuditWarning(warn func(error)) ProjectOption {
	return func(p *Project) { p.auditWarn = warn }
}

// WithRunner runs commands with r instead of the OS backend (runner.New on
// Linux, darwin.New on macOS).
func WithRunner(r runner.Runner) ProjectOption {
	return func(p *Project) { p.runner = r }
}

// LoadProject finds the project config as git finds .git: the first
// cordon.yaml in dir or a folder above it, which must have been trusted
// (spec.Trust, `cordon trust`): a sandboxed command could have written it.
// Without one it uses the built-in workspace profile rooted at dir: dir
// read-write, the host system read-only, no network.
func LoadProject(dir string, opts ...ProjectOption) (*Project, error) {
	path, err := spec.DiscoverTrusted(dir)
	if err != nil {
		return nil, err
	}
	if path == "" {
		cfg, err := spec.Profile("workspace", dir)
		if err != nil {
			return nil, err
		}
		return NewProject(cfg, opts...), nil
	}
	return LoadConfig(path, opts...)
}

// LoadConfig loads the config file at path.
func LoadConfig(path string, opts ...ProjectOption) (*Project, error) {
	cfg, err := spec.Load(path)
	if err != nil {
		return nil, err
	}
	return NewProject(cfg, opts...), nil
}

// NewProject wraps a config already in hand (from spec.Parse or
// spec.Profile).
func NewProject(cfg *spec.Config, opts ...ProjectOption) *Project {
	c := *cfg
	c.Sandbox = *cfg.Sandbox.Clone()
	spec.GuardControlFiles(&c.Sandbox, []string{cfg.Source}, []string{cfg.Audit})
	p := &Project{cfg: &c, via: FrontEndAPI, logPaths: []string{cfg.Audit}}
	for _, o := range opts {
		o(p)
	}
	p.log = audit.New(p.via, p.logPaths...)
	if !cfg.AuditRequired {
		warn := p.auditWarn
		if warn == nil {
			warn = func(err error) {
				logrus.WithError(err).Warn("audit record not written (audit_required: false)")
			}
		}
		p.log.BestEffort(warn)
	}
	return p
}

// Config returns a copy of the project's config.
func (p *Project) Config() *spec.Config {
	c := *p.cfg
	c.Sandbox = *p.cfg.Sandbox.Clone()
	return &c
}

// Sandbox returns the project's top-level sandbox.
func (p *Project) Sandbox() (*Sandbox, error) { return p.newSandbox(&p.cfg.Sandbox, nil, nil) }

// Worker derives the sandbox of the worker file at path (*.worker.yaml)
// from the top-level sandbox. See Sandbox.Derive.
func (p *Project) Worker(path string, opts ...DeriveOption) (*Sandbox, error) {
	top, err := p.Sandbox()
	if err != nil {
		return nil, err
	}
	return top.Worker(path, opts...)
}

// Derive derives w's sandbox from the top-level sandbox. See
// Sandbox.Derive.
func (p *Project) Derive(w *spec.Worker, opts ...DeriveOption) (*Sandbox, error) {
	top, err := p.Sandbox()
	if err != nil {
		return nil, err
	}
	return top.Derive(w, opts...)
}

// newSandbox makes the Sandbox of sb; links, when recent and found for
// the same sandbox (a derivation that changed nothing the walk reads),
// spare its mount table the walk (see recentLinks).
func (p *Project) newSandbox(sb *spec.Sandbox, known *readIdentity, links *spec.Links) (*Sandbox, error) {
	c := sb.Clone()
	withHostTools(c)
	// A sandbox built in code (NewProject) or changed by a front end's
	// flags (--mount) gets the same home-directory check as a config.
	added, err := withGit(c, known)
	if err != nil {
		return nil, err
	}
	if err := spec.GuardHome(c); err != nil {
		return nil, err
	}
	t, err := mounts.NewLinked(c, links)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{p: p, sb: c, table: t, git: added}
	s.files = &Files{t: t, sb: c, log: p.log}
	return s, nil
}

// backend returns the runner: the project's own, or the OS backend, made
// once per process.
func (p *Project) backend() (runner.Runner, error) {
	if p.runner != nil {
		return p.runner, nil
	}
	return hostBackend()
}

// CheckBackend reports whether this host has a backend that runs
// commands (the OS backend: libcontainer on Linux, Seatbelt on macOS), and
// if not, why.
func CheckBackend() error {
	_, err := hostBackend()
	return err
}

func hostBackend() (runner.Runner, error) {
	osBackend.once.Do(func() { osBackend.r, osBackend.err = newBackend() })
	return osBackend.r, osBackend.err
}

var osBackend struct {
	once sync.Once
	r    runner.Runner
	err  error
}

// Sandbox is one effective sandbox: a project's top level, or a worker
// derived from it. It is immutable and safe for concurrent use.
type Sandbox struct {
	p     *Project
	sb    *spec.Sandbox
	table *mounts.Table
	files *Files
	// git is what withGit added to sb, which a front end's flags are
	// applied without (Override), so that a --mount of the same .git
	// replaces it.
	git gitAdded
}

// Spec returns a copy of the sandbox's definition.
func (s *Sandbox) Spec() *spec.Sandbox { return s.sb.Clone() }

// Summary describes the sandbox as `cordon explain` prints it.
func (s *Sandbox) Summary() spec.Summary { return spec.Summarize(s.sb) }

// Files returns the file tools and the query API of the sandbox.
func (s *Sandbox) Files() *Files { return s.files }

// deriveConfig collects DeriveOptions.
type deriveConfig struct {
	attach []string
	policy attach.Policy
}

// DeriveOption adjusts a derivation.
type DeriveOption func(*deriveConfig)

// Attach passes files this sandbox can read to the child, which sees them
// read-only at the same paths. The attach.DefaultPolicy caps them unless
// AttachPolicy sets another.
func Attach(paths ...string) DeriveOption {
	return func(c *deriveConfig) { c.attach = append(c.attach, paths...) }
}

// AttachPolicy sets the policy the attachments are checked against.
func AttachPolicy(p attach.Policy) DeriveOption {
	return func(c *deriveConfig) { c.policy = p }
}

// Worker loads the worker file at path and derives its sandbox from s.
func (s *Sandbox) Worker(path string, opts ...DeriveOption) (*Sandbox, error) {
	w, err := spec.LoadWorker(path)
	if err != nil {
		return nil, err
	}
	child, err := s.Derive(w, opts...)
	if err != nil {
		return nil, err
	}
	// The worker file steers later derivations: the child must not rewrite it.
	guarded := child.sb.Clone()
	spec.GuardControlFiles(guarded, []string{path}, nil)
	return s.p.newSandbox(guarded, nil, s.recentLinks())
}

// Derive returns the sandbox of worker w started from s: s ∩ w's request
// (spec.Derive), plus the attachments. Asking for more than s allows, a
// chain deeper than delegation.max_depth, or an attachment s cannot read is
// an error that names the rule (matching spec.ErrWidening or one of
// attach's sentinels); the refusal is recorded in the audit log.
func (s *Sandbox) Derive(w *spec.Worker, opts ...DeriveOption) (*Sandbox, error) {
	c := deriveConfig{policy: attach.DefaultPolicy()}
	for _, o := range opts {
		o(&c)
	}
	child, err := spec.Derive(s.sb, w, s.p.cfg.Delegation.MaxDepth)
	if err == nil {
		child, err = s.attach(child, c)
	}
	if err != nil {
		return nil, s.refuse(err)
	}
	return s.p.newSandbox(child, nil, s.recentLinks())
}

// attach checks c's attachments in s and shows them in child read-only.
func (s *Sandbox) attach(child *spec.Sandbox, c deriveConfig) (*spec.Sandbox, error) {
	if len(c.attach) == 0 {
		return child, nil
	}
	ms, err := attach.Resolve(s.table, c.attach, c.policy)
	if err != nil {
		return nil, err
	}
	return attach.Apply(child, ms)
}

// refuse records the refusals in err (a derivation, an attachment, a path)
// in the audit log and returns err, joined with the log's error when the
// record could not be written.
func (s *Sandbox) refuse(err error) error {
	if aerr := s.p.log.Denied(s.sb, err); aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}

// Files is the query API and the file tools of one sandbox: the paths are
// the ones a command inside sees, and every answer is the one that command
// would meet. Refusals are recorded in the project's audit log.
type Files struct {
	t   *mounts.Table
	sb  *spec.Sandbox
	log *audit.Log
}

// Table returns the underlying mount table.
func (f *Files) Table() *mounts.Table { return f.t }

// Read returns the text of a file, cut after maxChars characters
// (mounts.DefaultMaxChars when 0).
func (f *Files) Read(path string, maxChars int) (string, error) {
	s, err := f.t.Read(path, maxChars)
	return s, f.record(err)
}

// Write creates or replaces a file atomically.
func (f *Files) Write(path, content string) error { return f.record(f.t.Write(path, content)) }

// List returns the paths under dir whose path relative to it matches
// pattern ("**" spans levels).
func (f *Files) List(dir, pattern string) ([]string, error) {
	out, err := f.t.List(dir, pattern)
	return out, f.record(err)
}

// Check returns nil when the sandbox may read (or, with write, write) path,
// and otherwise the typed error that says what IS allowed. A write is
// decided as Write and the broker decide it (mounts.Table.CheckWrite).
func (f *Files) Check(path string, write bool) error {
	if write {
		return f.record(f.t.CheckWrite(path))
	}
	return f.record(f.t.Check(path, false))
}

// CanRead reports whether the sandbox may read path.
func (f *Files) CanRead(path string) bool { return f.Check(path, false) == nil }

// CanWrite reports whether the sandbox may write path.
func (f *Files) CanWrite(path string) bool { return f.Check(path, true) == nil }

// Resolve returns the host path of a sandbox path the sandbox may read.
func (f *Files) Resolve(path string) (string, error) {
	h, err := f.t.Resolve(path)
	return h, f.record(err)
}

// record writes a policy refusal to the audit log; a refusal that cannot be
// recorded is returned together with the log's error.
func (f *Files) record(err error) error {
	if err == nil || !audit.IsPolicyRefusal(err) {
		return err
	}
	if aerr := f.log.Denied(f.sb, err); aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}
