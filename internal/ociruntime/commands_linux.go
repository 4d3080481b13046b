package ociruntime

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/utils"
	"golang.org/x/sys/unix"
)

// startFlags registers the flags create and run share.
func startFlags(fs *flag.FlagSet, o *startOpts) {
	fs.StringVar(&o.bundle, "bundle", "", "path to the root of the bundle directory, defaults to the current directory")
	fs.StringVar(&o.bundle, "b", "", "path to the root of the bundle directory")
	fs.StringVar(&o.consoleSocket, "console-socket", "", "path to an AF_UNIX socket which will receive the console's master")
	fs.StringVar(&o.pidFile, "pid-file", "", "specify the file to write the process id to")
	fs.BoolVar(&o.noPivot, "no-pivot", false, "do not use pivot root to jail process inside rootfs")
	fs.BoolVar(&o.noNewKeyring, "no-new-keyring", false, "do not create a new session keyring for the container")
	fs.IntVar(&o.preserveFDs, "preserve-fds", 0, "pass N additional file descriptors to the container")
	var pidfd string
	fs.StringVar(&pidfd, "pidfd-socket", "", "(not supported)")
}

func createCmd(g *globals, args []string) (int, error) {
	var o startOpts
	fs := newFlags("create")
	startFlags(fs, &o)
	rest, err := parseArgs(fs, args, 1, false)
	if err != nil {
		return -1, err
	}
	if err := refusePidfd(fs); err != nil {
		return -1, err
	}
	return startContainer(g, rest[0], o, actCreate)
}

func runCmd(g *globals, args []string) (int, error) {
	var o startOpts
	fs := newFlags("run")
	startFlags(fs, &o)
	fs.BoolVar(&o.detach, "detach", false, "detach from the container's process")
	fs.BoolVar(&o.detach, "d", false, "detach from the container's process")
	fs.BoolVar(&o.keep, "keep", false, "do not delete the container after it exits")
	fs.BoolVar(&o.noSubreaper, "no-subreaper", false, "disable the use of the subreaper")
	rest, err := parseArgs(fs, args, 1, false)
	if err != nil {
		return -1, err
	}
	if err := refusePidfd(fs); err != nil {
		return -1, err
	}
	return startContainer(g, rest[0], o, actRun)
}

func refusePidfd(fs *flag.FlagSet) error {
	if f := fs.Lookup("pidfd-socket"); f != nil && f.Value.String() != "" {
		return fmt.Errorf("%w: --pidfd-socket; leave it out (the caller gets the PID from --pid-file)", ErrUnsupported)
	}
	return nil
}

func startCmd(g *globals, args []string) (int, error) {
	rest, err := parseArgs(newFlags("start"), args, 1, false)
	if err != nil {
		return -1, err
	}
	c, err := getContainer(g, rest[0])
	if err != nil {
		return -1, err
	}
	status, err := c.Status()
	if err != nil {
		return -1, err
	}
	switch status {
	case libcontainer.Created:
		if err := supervisorServes(g, rest[0]); err != nil {
			return -1, err
		}
		return 0, c.Exec()
	case libcontainer.Stopped:
		return -1, errors.New("cannot start a container that has stopped")
	case libcontainer.Running:
		return -1, errors.New("cannot start an already running container")
	default:
		return -1, fmt.Errorf("cannot start a container in the %s state", status)
	}
}

// containerState is runc's state JSON (the runtime-spec state with
// runc's rootfs, created and owner).
type containerState struct {
	Version        string            `json:"ociVersion"`
	ID             string            `json:"id"`
	InitProcessPid int               `json:"pid"`
	Status         string            `json:"status"`
	Bundle         string            `json:"bundle"`
	Rootfs         string            `json:"rootfs"`
	Created        time.Time         `json:"created"`
	Annotations    map[string]string `json:"annotations,omitempty"`
	Owner          string            `json:"owner"`
}

func stateOf(c *libcontainer.Container) (containerState, error) {
	status, err := c.Status()
	if err != nil {
		return containerState{}, err
	}
	st, err := c.State()
	if err != nil {
		return containerState{}, err
	}
	pid := st.BaseState.InitProcessPid
	if status == libcontainer.Stopped {
		pid = 0
	}
	bundle, annotations := utils.Annotations(st.Config.Labels)
	return containerState{
		Version: st.BaseState.Config.Version, ID: st.BaseState.ID, InitProcessPid: pid,
		Status: status.String(), Bundle: bundle, Rootfs: st.BaseState.Config.Rootfs,
		Created: st.BaseState.Created, Annotations: annotations,
	}, nil
}

func stateCmd(g *globals, args []string) (int, error) {
	rest, err := parseArgs(newFlags("state"), args, 1, false)
	if err != nil {
		return -1, err
	}
	c, err := getContainer(g, rest[0])
	if err != nil {
		return -1, err
	}
	cs, err := stateOf(c)
	if err != nil {
		return -1, err
	}
	data, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return -1, err
	}
	_, err = os.Stdout.Write(data)
	return 0, err
}

func killCmd(g *globals, args []string) (int, error) {
	fs := newFlags("kill")
	var all bool
	fs.BoolVar(&all, "all", false, "(obsolete)")
	fs.BoolVar(&all, "a", false, "(obsolete)")
	rest, err := parseArgs(fs, args, 1, true)
	if err != nil {
		return -1, err
	}
	if len(rest) > 2 {
		return -1, fmt.Errorf("%w: \"kill\" requires a maximum of 2 argument(s)", ErrUsage)
	}
	c, err := getContainer(g, rest[0])
	if err != nil {
		return -1, err
	}
	sig := "SIGTERM"
	if len(rest) == 2 {
		sig = rest[1]
	}
	s, err := parseSignal(sig)
	if err != nil {
		return -1, err
	}
	err = c.Signal(s)
	if errors.Is(err, libcontainer.ErrNotRunning) && all {
		err = nil
	}
	return 0, err
}

func parseSignal(raw string) (unix.Signal, error) {
	if n, err := strconv.Atoi(raw); err == nil {
		return unix.Signal(n), nil
	}
	sig := strings.ToUpper(raw)
	if !strings.HasPrefix(sig, "SIG") {
		sig = "SIG" + sig
	}
	if s := unix.SignalNum(sig); s != 0 {
		return s, nil
	}
	return -1, fmt.Errorf("%w: unknown signal %q; give a name (TERM, SIGKILL) or a number", ErrUsage, raw)
}

// killContainer kills the container's init and destroys the container
// once the init is gone, as runc's killContainer does, but looks at the
// init again after 1 ms, then at doubling intervals up to runc's 100 ms
// (10 s in all, runc's bound): an init killed outright is gone at once,
// and `delete --force` of a created container need not wait a tenth of a
// second for it.
func killContainer(c *libcontainer.Container) error {
	_ = c.Signal(unix.SIGKILL)
	step := time.Millisecond
	for waited := time.Duration(0); waited < 10*time.Second; waited += step {
		time.Sleep(step)
		if err := c.Signal(unix.Signal(0)); err != nil {
			return c.Destroy()
		}
		step = min(2*step, 100*time.Millisecond)
	}
	return errors.New("container init still running")
}

// deleteCmd is runc's delete: a stopped container is destroyed, a
// created one is killed first, a running or paused one only with --force.
// runc 1.2 and later kill a stopped container too under --force, for the
// processes a container without a PID namespace of its own may leave, and
// so wait 100 ms in killContainer on every `podman run --rm` (podman
// deletes with --force); libcontainer's Destroy of a stopped container
// kills those processes itself, so a stopped container is destroyed at
// once here, as runc 1.1 did.
func deleteCmd(g *globals, args []string) (int, error) {
	fs := newFlags("delete")
	var force bool
	fs.BoolVar(&force, "force", false, "forcibly delete the container if it is still running (SIGKILL)")
	fs.BoolVar(&force, "f", false, "forcibly delete the container if it is still running (SIGKILL)")
	rest, err := parseArgs(fs, args, 1, false)
	if err != nil {
		return -1, err
	}
	id := rest[0]
	// The broker's supervisor (if any) ends once the container is gone.
	stop := stopBrokerOf(g, id)
	c, err := getContainer(g, id)
	if err != nil {
		if errors.Is(err, libcontainer.ErrNotExist) {
			defer stop()
			// The state directory may be left from a failed create.
			path := filepath.Join(g.root, id)
			if e := os.RemoveAll(path); e != nil {
				fmt.Fprintf(os.Stderr, "remove %s: %v\n", path, e)
			}
			if force {
				return 0, nil
			}
		}
		return -1, err
	}
	s, err := c.Status()
	if err != nil {
		return -1, err
	}
	switch {
	case s == libcontainer.Stopped:
		defer stop()
		return 0, c.Destroy()
	case s == libcontainer.Created || force:
		defer stop()
		return 0, killContainer(c)
	default:
		return -1, fmt.Errorf("cannot delete container %s that is not stopped: %s; stop it first, or delete it with --force", id, s)
	}
}

func pauseCmd(g *globals, args []string) (int, error) {
	rest, err := parseArgs(newFlags("pause"), args, 1, false)
	if err != nil {
		return -1, err
	}
	c, err := getContainer(g, rest[0])
	if err != nil {
		return -1, err
	}
	return 0, c.Pause()
}

func resumeCmd(g *globals, args []string) (int, error) {
	rest, err := parseArgs(newFlags("resume"), args, 1, false)
	if err != nil {
		return -1, err
	}
	c, err := getContainer(g, rest[0])
	if err != nil {
		return -1, err
	}
	return 0, c.Resume()
}
