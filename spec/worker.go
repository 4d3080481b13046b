package spec

// Worker is a parsed *.worker.yaml file: what a child worker asks for.
type Worker struct {
	// Name is the worker's name (from the file, or its base name).
	Name string
	// Sandbox is the worker's request; nil makes the worker a pure function:
	// no workspace, no mounts, no network.
	Sandbox *WorkerRequest
	// Source is the file the worker was read from, for messages.
	Source string
}

// ZoneMode is the access a worker asks for on a zone.
type ZoneMode string

const (
	// ModeRO asks for read-only access.
	ModeRO ZoneMode = "ro"
	// ModeRW asks for read-write access.
	ModeRW ZoneMode = "rw"
)

// ZoneRequest selects one named zone (mount) of the parent.
type ZoneRequest struct {
	// Name is the zone's name in the parent. "workspace" names the root.
	Name string
	// Mode is ro or rw (default: the parent's mode).
	Mode ZoneMode
}

// WorkerRequest is the sandbox section of a worker file. Derive intersects
// it with the parent: it can only narrow.
type WorkerRequest struct {
	// Restrict, when set, narrows the workspace to this subtree (a sandbox
	// path, absolute or relative to the parent's root).
	Restrict string
	// Readonly makes everything the child sees read-only.
	Readonly bool
	// Zones, when set, keeps only these named zones of the parent.
	Zones []ZoneRequest
	// Network is the child's network; nil means off.
	Network *Network
	// Limits lowers limits; a zero field inherits the parent's.
	Limits Limits
}
