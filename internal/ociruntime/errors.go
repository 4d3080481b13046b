package ociruntime

import "errors"

// ErrUnsupported is returned for what cordon-oci does not do: a runc
// command or flag it refuses, an annotation it does not enforce yet, or
// any use on a platform other than Linux.
var ErrUnsupported = errors.New("not supported by cordon-oci")

// ErrUsage is returned for a command line that runc would refuse too: an
// unknown flag, a missing or extra argument.
var ErrUsage = errors.New("incorrect usage")

// ErrAnnotation is matched by every refused run.cordon.* annotation: a
// bad value (the config's own error is wrapped too) or one that is not
// enforced in this mode.
var ErrAnnotation = errors.New("invalid run.cordon annotation")

// ErrSupervisorGone is start's refusal of a container with run.cordon
// annotations whose supervisor, which enforces them, is no longer running.
var ErrSupervisorGone = errors.New("the container's cordon supervisor is gone")
