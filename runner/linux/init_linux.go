package linux

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/cordon-run/cordon/runner"

	"github.com/opencontainers/runc/libcontainer"
	// nsenter joins and creates namespaces in C before the Go runtime
	// starts in the re-executed init; it does nothing in other processes.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"

	"github.com/cordon-run/cordon/internal/netguard"
)

// sandboxInitArg makes the re-executed binary act as the sandbox's PID 1.
const sandboxInitArg = "cordon-sandbox-init"

// Init must be called first thing in main (and in TestMain) of every binary
// that starts containers. When the binary was re-executed by libcontainer as
// a container's init ("init" with libcontainer's pipes in the environment),
// or by cordon as the sandbox's PID 1 or a session's reaper, Init runs that role and never
// returns. Without it, every run fails at start (the Go API's Run says so).
func Init() {
	initCalled.Store(true)
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case "init":
		// Only libcontainer's re-exec hands over its pipes; `cordon init`
		// typed by a person is the CLI's own command.
		if os.Getenv("_LIBCONTAINER_INITPIPE") != "" && os.Getenv("_LIBCONTAINER_SYNCPIPE") != "" {
			libcontainer.Init()
		}
	case netguard.HelperArg:
		// A C constructor joined the sandbox's namespaces first.
		netguard.HelperMain()
	case sessionReaperArg:
		os.Exit(sessionReaperMain(os.Args[2:]))
	case sandboxInitArg:
		// The C constructor in sandboxinit_linux.c handles this before
		// the Go runtime starts; reaching Go means it did not run.
		fmt.Fprintln(os.Stderr, "cordon: the sandbox init did not run (built without cgo?)")
		os.Exit(runner.ExitSetupError)
	}
}

// initCalled records that Init ran in this process: without it,
// libcontainer's re-execution of this binary would run the program's own
// main instead of the sandbox's init.
var initCalled atomic.Bool

// ErrNoInit is the set-up error of a run in a program that never called
// Init (cordon.Init in the Go API).
var ErrNoInit = errors.New("cordon.Init() (runner.Init) was not called: call it first thing in main, and in TestMain of tests that run sandboxes; " +
	"libcontainer re-executes this binary as the sandbox's init, and only Init makes it one")

// initArgs wraps a command so that it runs under cordon's own PID 1. Inside
// the container /proc/self/exe is libcontainer's sealed copy of this binary,
// so nothing has to be mounted for it.
func initArgs(args []string) []string {
	return append([]string{"/proc/self/exe", sandboxInitArg, "--"}, args...)
}
