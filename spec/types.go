package spec

import "time"

// Config is a whole cordon configuration file: the sandbox, the delegation
// policy for child workers and the optional audit log.
type Config struct {
	// Sandbox is the boundary every command of this config runs in.
	Sandbox Sandbox
	// Delegation bounds how child workers may be derived.
	Delegation Delegation
	// Session bounds the life of warm sessions of this config.
	Session Session
	// Audit is the path of an append-only JSON-lines audit log, or "".
	Audit string
	// AuditRequired, when true (the default), fails a run closed when its
	// audit record cannot be written; `audit_required: false` makes the log
	// best effort (a failed write is only reported).
	AuditRequired bool
	// Source is the file the config was read from, or "profile:NAME" for a
	// built-in profile. It is used in messages only.
	Source string
}

// Delegation bounds worker derivation.
type Delegation struct {
	// MaxDepth is the deepest worker chain allowed (default 5).
	MaxDepth int
}

// DefaultMaxDepth is the delegation depth used when a config sets none.
const DefaultMaxDepth = 5

// Sandbox is the normalized, validated boundary. Every path in it is absolute
// and clean once it has come out of Load, Parse, Profile or Derive:
//
//   - Root is a host directory, mounted at the same path inside the sandbox.
//     It is "" for a pure-function worker, which has no workspace at all.
//   - Mount targets are absolute sandbox paths; a target defaults to its
//     source, so host paths and sandbox paths agree.
//   - Deny and Protect are absolute sandbox paths (relative entries in the
//     file are taken relative to Root).
type Sandbox struct {
	// Root is the workspace directory (host path == sandbox path).
	Root string
	// Readonly makes the workspace read-only.
	Readonly bool
	// Mounts are extra bind mounts, in the order given.
	Mounts []Mount
	// Deny lists sandbox paths that are invisible and unwritable, whatever
	// mount holds them.
	Deny []string
	// Protect lists sandbox paths that stay readable but are never writable,
	// even when they do not exist when the sandbox starts.
	Protect []string
	// StrictDeny makes every open of a path, reads included, a decision of
	// the runner's broker, so that a file the host creates or renames under
	// a denied name while the sandbox runs is never readable in it. Without
	// it, reads stay in the kernel: a denied path is hidden by what covered
	// it at start, and on Linux the runner's deny watcher covers a file the
	// host puts under a denied name later as it appears, leaving a window
	// of milliseconds (config key strict_deny).
	StrictDeny bool `json:",omitempty"`
	// Network is the network policy.
	Network Network
	// System says which host system directories are visible read-only.
	System System
	// Limits are the resource limits.
	Limits Limits
	// Env says which variables reach the sandboxed process.
	Env Env
	// Caches names the package caches (CacheNames) the sandbox keeps from
	// one run to the next, each a per-user folder outside the workspace
	// mounted read-write at CacheTarget/NAME (config key caches; on in
	// the built-in profiles but strict). AddHostTools mounts them.
	Caches []string `json:",omitempty"`
	// Toolchains mounts read-only the toolchain roots below the caller's
	// home that the sandbox's PATH reaches (config key toolchains; on in
	// the built-in profiles but strict). AddHostTools mounts them.
	Toolchains bool `json:",omitempty"`
	// AllowHomeWorkspace lets a writable workspace or mount be, or hold, a
	// home directory (config key allow_home_workspace); its start-up files
	// (HomeProtect) are then protected. Without it such a sandbox is
	// refused (GuardHome).
	AllowHomeWorkspace bool `json:",omitempty"`
	// NoGitIdentity leaves out the host's git identity (config key
	// git_identity: false): by default git in the sandbox takes the
	// caller's user.name and user.email, and nothing else, from a
	// generated config (see the root package's newSandbox).
	NoGitIdentity bool `json:",omitempty"`
	// NoGitWorktree leaves out the mount of the main repository's .git
	// that a workspace which is a linked worktree or a submodule checkout
	// gets by default (config key git_worktree: false; see GitDirMount).
	NoGitWorktree bool `json:",omitempty"`
	// RequireOSSandbox, when true (the default), refuses to run where the OS
	// backend cannot enforce every part of the boundary. When false, cordon
	// runs with what can be enforced and reports what was not.
	RequireOSSandbox bool
	// Lineage is the chain of worker names this sandbox was derived through,
	// outermost first. It is empty for a top-level sandbox.
	Lineage []string
	// Guarded lists host directories that a sandbox up the worker chain
	// could write: below them, no mount source of this sandbox may pass
	// through a symlink, which such a sandbox could have planted. Derive
	// fills it; the runner and the file tools check it on every use.
	Guarded []string `json:",omitempty"`
	// Overlay, when set, mounts the workspace copy-on-write: Root is the
	// read-only lower layer and every write lands in Overlay.Upper
	// (internal/overlay keeps the layers; `cordon apply` lands them).
	Overlay *Overlay `json:",omitempty"`
	// OverlayName, when set, is the overlay every run and session of the
	// sandbox writes to unless told another (config keys workspace_mode:
	// overlay and overlay; empty: direct mode).
	OverlayName string `json:",omitempty"`
}

// Overlay is the upper layer of a copy-on-write workspace: two host
// directories on one file system, outside the workspace, that the run's
// overlayfs mount writes to.
type Overlay struct {
	// Name is the overlay's name (cordon run --overlay NAME).
	Name string
	// Upper receives the files the sandbox creates or changes, and the
	// whiteouts of those it removes.
	Upper string
	// Work is overlayfs' work directory, beside Upper.
	Work string
}

// Mount is one bind mount with Docker --mount semantics.
type Mount struct {
	// Source is the absolute host path; it must exist.
	Source string
	// Target is the absolute path inside the sandbox (default: Source).
	Target string
	// Readonly makes the mount read-only.
	Readonly bool
	// Name is an optional zone name that child workers may select.
	Name string
	// Suffixes, when not empty, is the application-level list of file
	// suffixes the file tools accept under this mount (".json").
	Suffixes []string
	// MaxFileBytes, when above zero, is the application-level size limit of
	// the file tools under this mount.
	MaxFileBytes int64
	// Cache marks the mount of cordon's own per-user caches (AddHostTools;
	// never set from a config): a folder only sandboxes write and the host
	// runs nothing from, so an overlay run needs no broker for it
	// (OverlayUnbrokered).
	Cache bool `json:",omitempty"`
}

// Network is the network policy: off, on, or on for an allow list only.
type Network struct {
	// Enabled gives the sandbox network access.
	Enabled bool
	// Allow, when not empty, restricts network access to these
	// "host[:port]" patterns ("*.pypi.org", "github.com:443"), and
	// "tcp://host:port" ones for a port whose bytes the guard forwards
	// unread ("tcp://db.example.com:5432").
	Allow []string
}

// SystemKind is how host system directories are exposed.
type SystemKind string

const (
	// SystemHost exposes the host's /usr /bin /lib* /sbin /etc read-only,
	// minus secrets.
	SystemHost SystemKind = "host"
	// SystemNone exposes no system directories beyond minimal runtime paths.
	SystemNone SystemKind = "none"
	// SystemRootfs uses a directory as the read-only root filesystem.
	SystemRootfs SystemKind = "rootfs"
)

// System says which host system directories the sandbox sees.
type System struct {
	// Kind is host, none or rootfs.
	Kind SystemKind
	// Rootfs is the absolute rootfs directory when Kind is SystemRootfs.
	Rootfs string
}

// Limits are resource limits. A zero field is unset (no limit), except that
// validation rejects an explicit zero or negative timeout, memory or pids.
type Limits struct {
	// Timeout kills the whole sandbox after this long.
	Timeout time.Duration
	// Memory is the memory limit in bytes.
	Memory int64
	// Pids is the maximum number of processes.
	Pids int64
	// FileSize is the largest file the process may write (RLIMIT_FSIZE).
	FileSize int64
	// CPUs is the CPU quota in cores (1.5 = one and a half cores).
	CPUs float64
	// Output caps the bytes of stdout and of stderr that are kept.
	Output int64
}

// Env says which environment variables the sandboxed process gets.
type Env struct {
	// Pass lists host variables passed through by name.
	Pass []string
	// Set lists variables set to fixed values (they win over Pass).
	Set map[string]string
}
