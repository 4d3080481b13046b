package ociruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// specConfig is the bundle's spec file.
const specConfig = "config.json"

func specVersion() string { return specs.Version }

// loadSpec reads the bundle's spec, as runc's loadSpec does.
func loadSpec(path string) (*specs.Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("JSON specification file %s not found", path)
		}
		return nil, err
	}
	defer f.Close()
	var s *specs.Spec
	if err := json.NewDecoder(f).Decode(&s); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	if s == nil {
		return nil, errors.New("config cannot be null")
	}
	return s, validateProcessSpec(s.Process)
}

func validateProcessSpec(p *specs.Process) error {
	switch {
	case p == nil:
		return errors.New("process property must not be empty")
	case p.Cwd == "":
		return errors.New("cwd property must not be empty")
	case !filepath.IsAbs(p.Cwd):
		return errors.New("cwd must be an absolute path")
	case len(p.Args) == 0:
		return errors.New("args must not be empty")
	}
	return nil
}

// newProcess converts a spec process to libcontainer's, as runc's
// newProcess does: cordon run's converter, plus what runc sets that
// cordon's own specs never do (scheduler, I/O priority, CPU affinity).
func newProcess(p *specs.Process) (*libcontainer.Process, error) {
	lp, err := backend.NewProcess(p)
	if err != nil {
		return nil, err
	}
	lp.Scheduler = p.Scheduler
	lp.IOPriority = p.IOPriority
	aff, err := configs.ConvertCPUAffinity(p.ExecCPUAffinity)
	if err != nil {
		return nil, err
	}
	lp.CPUAffinity = aff
	return lp, nil
}

// createPidFile writes the process's PID atomically (create, then
// rename), as runc does.
func createPidFile(path string, p *libcontainer.Process) error {
	pid, err := p.Pid()
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path))
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_SYNC, 0o666)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.Itoa(pid))
	f.Close()
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
