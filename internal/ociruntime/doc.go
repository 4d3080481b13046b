// Package ociruntime is cordon's OCI runtime: the runc command line
// (create, start, state, kill, delete, run, exec, features, --version and
// runc's global flags) that podman, containerd's runc v2 shim (and so a
// Kubernetes RuntimeClass), Docker and CRI-O call, answered by the cordon
// binary when it is invoked as cordon-oci.
//
// The containers are runc's: libcontainer creates and runs them, and the
// command line follows runc's own main package (exit codes, the state
// JSON, the console socket, the create/start split, hooks). On top of
// that, cordon's boundary is applied from the bundle's annotations
// (run.cordon.deny, run.cordon.protect, ...), parsed with the config's
// own syntax and validation (package spec). A container without
// annotations runs as under runc.
package ociruntime
