package ociruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/moby/sys/userns"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// action is what runner.run does with the container.
type action int

const (
	actCreate action = iota + 1
	actRun
)

// runner starts a container's init or an exec'd process and relays its
// stdio and signals, as runc's runner does.
type runner struct {
	init            bool
	enableSubreaper bool
	shouldDestroy   bool
	detach          bool
	preserveFDs     int
	pidFile         string
	consoleSocket   string
	container       *libcontainer.Container
	action          action
	subCgroupPaths  map[string]string
	// sup is the container's broker supervisor (nil: none).
	sup *supervised
}

func (r *runner) run(config *specs.Process) (_ int, err error) {
	defer func() {
		if err != nil {
			r.destroy()
		}
	}()
	if err := r.checkTerminal(config); err != nil {
		return -1, err
	}
	process, err := newProcess(config)
	if err != nil {
		return -1, err
	}
	process.LogLevel = strconv.Itoa(int(logrus.GetLevel()))
	process.Init = r.init
	process.SubCgroupPaths = r.subCgroupPaths
	base := 3 + len(process.ExtraFiles)
	for i := base; i < base+r.preserveFDs; i++ {
		if _, err := unix.FcntlInt(uintptr(i), unix.F_GETFD, 0); err != nil {
			return -1, fmt.Errorf("unable to stat preserved-fd %d (of %d): %w", i-base, r.preserveFDs, err)
		}
		process.ExtraFiles = append(process.ExtraFiles, os.NewFile(uintptr(i), "PreserveFD:"+strconv.Itoa(i)))
	}
	detach := r.detach || r.action == actCreate
	handlerCh := newSignalHandler(r.enableSubreaper)
	t, err := setupIO(process, r.container, config.Terminal, detach, r.consoleSocket)
	if err != nil {
		return -1, err
	}
	defer t.Close()
	if r.action == actCreate || r.sup != nil {
		err = r.container.Start(process)
	} else {
		err = r.container.Run(process)
	}
	if r.sup != nil {
		err = r.handOver(process, err)
	}
	if err != nil {
		return -1, err
	}
	if err = t.waitConsole(); err != nil {
		r.terminate(process)
		return -1, err
	}
	t.closePostStart()
	if r.pidFile != "" {
		if err = createPidFile(r.pidFile, process); err != nil {
			r.terminate(process)
			return -1, err
		}
	}
	handler := <-handlerCh
	status, err := handler.forward(process, t, detach)
	if err != nil {
		r.terminate(process)
	}
	if detach {
		return 0, nil
	}
	if err == nil {
		r.destroy()
	}
	return status, err
}

// handOver gives the container to its supervisor once the init has
// started (started: Start's error): the container's command runs only
// after, as run's exec of the init (libcontainer's Run, split here) comes
// only once the gate has passed.
func (r *runner) handOver(process *libcontainer.Process, started error) error {
	if started != nil {
		r.sup.gate.cancel()
		return started
	}
	pid, err := process.Pid()
	if err != nil {
		r.sup.gate.cancel()
	} else {
		err = r.sup.gate.wait(pid)
	}
	if err != nil {
		r.terminate(process)
		return err
	}
	if r.action == actRun {
		return r.container.Exec()
	}
	return nil
}

func (r *runner) destroy() {
	if r.shouldDestroy {
		if err := r.container.Destroy(); err != nil {
			logrus.Warn(err)
		}
		if r.sup != nil {
			r.sup.stop()
		}
	}
}

func (r *runner) terminate(p *libcontainer.Process) {
	_ = p.Signal(unix.SIGKILL)
	_, _ = p.Wait()
}

func (r *runner) checkTerminal(config *specs.Process) error {
	detach := r.detach || r.action == actCreate
	if detach && config.Terminal && r.consoleSocket == "" {
		return fmt.Errorf("%w: cannot allocate tty if cordon-oci will detach without setting console socket", ErrUsage)
	}
	if (!detach || !config.Terminal) && r.consoleSocket != "" {
		return fmt.Errorf("%w: cannot use console socket if cordon-oci will not detach or allocate tty", ErrUsage)
	}
	return nil
}

// startOpts are the flags create and run share.
type startOpts struct {
	bundle, consoleSocket, pidFile string
	detach, keep, noSubreaper      bool
	noPivot, noNewKeyring          bool
	preserveFDs                    int
}

// startContainer is runc's startContainer with cordon's boundary: the
// bundle's run.cordon.* annotations are read and applied to the spec
// before libcontainer sees it, and a bad one fails here.
func startContainer(g *globals, id string, o startOpts, act action) (int, error) {
	if o.pidFile != "" {
		abs, err := filepath.Abs(o.pidFile)
		if err != nil {
			return -1, err
		}
		o.pidFile = abs
	}
	if o.bundle != "" {
		if err := os.Chdir(o.bundle); err != nil {
			return -1, err
		}
	}
	s, err := loadSpec(specConfig)
	if err != nil {
		return -1, err
	}
	b, err := applyAnnotations(s)
	if err != nil {
		return -1, err
	}
	c, sup, err := createContainer(g, id, s, o, b)
	if err != nil {
		return -1, err
	}
	r := &runner{
		enableSubreaper: !o.noSubreaper,
		shouldDestroy:   !o.keep,
		container:       c,
		consoleSocket:   o.consoleSocket,
		detach:          o.detach,
		pidFile:         o.pidFile,
		preserveFDs:     o.preserveFDs,
		action:          act,
		init:            true,
		sup:             sup,
	}
	return r.run(s.Process)
}

// createContainer makes the container's state; with a boundary that needs
// a supervisor it is started (see supervised), and with one that needs the
// broker the container's filter notifies the broker's calls.
func createContainer(g *globals, id string, s *specs.Spec, o startOpts, b Boundary) (*libcontainer.Container, *supervised, error) {
	rootlessCg, err := rootlessCgroups(g)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:       id,
		UseSystemdCgroup: g.systemdCgroup,
		NoPivotRoot:      o.noPivot,
		NoNewKeyring:     o.noNewKeyring,
		Spec:             s,
		RootlessEUID:     os.Geteuid() != 0,
		RootlessCgroups:  rootlessCg,
	})
	if err != nil {
		return nil, nil, err
	}
	if !needsSupervisor(b) {
		c, err := libcontainer.Create(g.root, id, cfg)
		return c, nil, err
	}
	return createSupervised(g, id, s, cfg, b)
}

// rootlessCgroups is runc's shouldUseRootlessCgroupManager: cgroup
// permission errors are ignored for a user, or in a user namespace.
func rootlessCgroups(g *globals) (bool, error) {
	switch g.rootless {
	case "", "auto":
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	default:
		return false, fmt.Errorf("%w: --rootless %q: write true, false or auto", ErrUsage, g.rootless)
	}
	if os.Geteuid() != 0 {
		return true, nil
	}
	// Under systemd in a user namespace runc asks systemd for its owner;
	// cordon-oci assumes a user's, as runc does when that fails.
	return userns.RunningInUserNS(), nil
}

func getContainer(g *globals, id string) (*libcontainer.Container, error) {
	if id == "" {
		return nil, errors.New("container id cannot be empty")
	}
	return libcontainer.Load(g.root, id)
}
