package session

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"

	"github.com/cordon-run/cordon/internal/broker"
	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// Built is the sandbox the backend built for a session (runner/linux's
// build: the run's set-up steps up to its created container, nothing
// running in it yet), and what of the backend the session needs while it
// lives. The session owns it from Start on and undoes it with Teardown.
type Built interface {
	// ID names the sandbox: the session's id.
	ID() string
	// Effective is the sandbox as built: the one asked for, narrowed
	// where it is not enforced (never widened).
	Effective() *spec.Sandbox
	// Table is the sandbox's mount table.
	Table() *mounts.Table
	// Container is the created container.
	Container() *libcontainer.Container
	// Process is the sandbox's first process as its OCI spec describes
	// it; the session makes it the fork server.
	Process() (*libcontainer.Process, error)
	// SeccompEnv is the environment variable that hands cordon's init
	// the compiled seccomp filter.
	SeccompEnv() string
	// Started runs the backend's steps between the start of the init lp
	// (its namespaces exist) and its exec; the error names the step.
	Started(lp *libcontainer.Process) error
	// Broker readies the broker for the seccomp listener the init sends
	// on conn; the function it returns waits for the listener and serves
	// it, telling obs of each refusal, until the sandbox is torn down.
	Broker(conn *os.File, obs broker.Observer) (serve func() error)
	// ExplainBroker explains a failure by the broker's refusals d.
	ExplainBroker(d []broker.Denial) runner.Explainer
	// NetMark marks where the network guard's record is; the function it
	// returns adds to a result what the guard decided since the mark.
	NetMark() (since func(*runner.Result))
	// UnreportedNetwork takes the guard's decisions no exec reported.
	UnreportedNetwork() []netguard.Event
	// Teardown undoes the build (the container, its cgroups, state
	// directory and lock) and reports an incomplete cleanup.
	Teardown() error
}

// Config is what Start needs besides the request.
type Config struct {
	// Sandbox is the session's sandbox as asked for (a copy the session
	// keeps).
	Sandbox *spec.Sandbox
	// Built is what the backend built of it.
	Built Built
	// Backend names the backend in the session's results.
	Backend string
	// Unenforced are the parts of Sandbox the backend does not enforce.
	Unenforced []string
	// CleanedUp tells the session's reaper that everything is cleaned up;
	// the session calls it once, last.
	CleanedUp func()
}

// UnreportedNetwork implements runner.NetworkTail: after Close, the guard
// (closed with the sandbox) has recorded every decision.
func (s *linuxSession) UnreportedNetwork() []netguard.Event {
	return s.built.UnreportedNetwork()
}
