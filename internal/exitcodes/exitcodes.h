// The exit codes of runner/runner.go (ExitTimeout, ExitSetupError, ...) for the
// C of cordon, in a leaf below the runner so that every C file may include
// it: the pre-runtime entry points (runner/linux/internal/pid1,
// internal/netguard's helper, cmd/cordon's exec client) exit with them
// before any Go runs. Defined here once for the C; cmd/cordon checks them
// against the Go constants when it builds (execproto_cgo_linux.go). A
// change here rebuilds a package that includes it only when the package's
// own files change too (the Go build cache does not hash a header outside
// the package): run `go build -a` after one.

#ifndef CORDON_EXITCODES_H
#define CORDON_EXITCODES_H

#define CORDON_EXIT_TIMEOUT 124
#define CORDON_EXIT_SETUP 125
#define CORDON_EXIT_NOT_RUNNABLE 126
#define CORDON_EXIT_NOT_FOUND 127

#endif
