package ociruntime

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/utils"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// execOpts are exec's flags.
type execOpts struct {
	consoleSocket, cwd, user, process, pidFile, apparmor, label string
	tty, detach, noNewPrivs, ignorePaused                       bool
	preserveFDs                                                 int
	env, caps, cgroups                                          listFlag
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func execCmd(g *globals, args []string) (int, error) {
	var o execOpts
	fs := newFlags("exec")
	fs.StringVar(&o.consoleSocket, "console-socket", "", "path to an AF_UNIX socket which will receive the console's master")
	fs.StringVar(&o.cwd, "cwd", "", "current working directory in the container")
	fs.Var(&o.env, "env", "set environment variables")
	fs.Var(&o.env, "e", "set environment variables")
	fs.BoolVar(&o.tty, "tty", false, "allocate a pseudo-TTY")
	fs.BoolVar(&o.tty, "t", false, "allocate a pseudo-TTY")
	fs.StringVar(&o.user, "user", "", "UID (format: <uid>[:<gid>])")
	fs.StringVar(&o.user, "u", "", "UID (format: <uid>[:<gid>])")
	fs.StringVar(&o.process, "process", "", "path to the process.json")
	fs.StringVar(&o.process, "p", "", "path to the process.json")
	fs.BoolVar(&o.detach, "detach", false, "detach from the container's process")
	fs.BoolVar(&o.detach, "d", false, "detach from the container's process")
	fs.StringVar(&o.pidFile, "pid-file", "", "specify the file to write the process id to")
	fs.StringVar(&o.label, "process-label", "", "set the asm process label for the process")
	fs.StringVar(&o.apparmor, "apparmor", "", "set the apparmor profile for the process")
	fs.BoolVar(&o.noNewPrivs, "no-new-privs", false, "set the no new privileges value for the process")
	fs.Var(&o.caps, "cap", "add a capability to the bounding set for the process")
	fs.Var(&o.caps, "c", "add a capability to the bounding set for the process")
	fs.IntVar(&o.preserveFDs, "preserve-fds", 0, "pass N additional file descriptors to the container")
	fs.Var(&o.cgroups, "cgroup", "run the process in an (existing) sub-cgroup")
	fs.BoolVar(&o.ignorePaused, "ignore-paused", false, "allow exec in a paused container")
	rest, err := parseArgs(fs, args, 1, true)
	if err != nil {
		return -1, err
	}
	noNewPrivsSet := false
	fs.Visit(func(f *flag.Flag) { noNewPrivsSet = noNewPrivsSet || f.Name == "no-new-privs" })
	if o.pidFile != "" {
		if o.pidFile, err = absPath(o.pidFile); err != nil {
			return -1, err
		}
	}
	c, err := getContainer(g, rest[0])
	if err != nil {
		return -1, err
	}
	status, err := c.Status()
	if err != nil {
		return -1, err
	}
	if status == libcontainer.Stopped {
		return -1, errors.New("cannot exec in a stopped container")
	}
	if status == libcontainer.Paused && !o.ignorePaused {
		return -1, errors.New("cannot exec in a paused container (use --ignore-paused to override)")
	}
	p, err := getProcess(o, rest, c, noNewPrivsSet)
	if err != nil {
		return -1, err
	}
	cg, err := subCgroupPaths(o.cgroups)
	if err != nil {
		return -1, err
	}
	r := &runner{
		container:      c,
		consoleSocket:  o.consoleSocket,
		detach:         o.detach,
		pidFile:        o.pidFile,
		action:         actRun,
		preserveFDs:    o.preserveFDs,
		subCgroupPaths: cg,
	}
	return r.run(p)
}

// getProcess is the process to exec: --process's file, or the bundle's
// process with exec's arguments and flags, as runc's getProcess.
func getProcess(o execOpts, rest []string, c *libcontainer.Container, noNewPrivsSet bool) (*specs.Process, error) {
	if o.process != "" {
		f, err := os.Open(o.process)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		var p specs.Process
		if err := json.NewDecoder(f).Decode(&p); err != nil {
			return nil, fmt.Errorf("decode %s: %w", o.process, err)
		}
		return &p, validateProcessSpec(&p)
	}
	bundle, ok := utils.SearchLabels(c.Config().Labels, "bundle")
	if !ok {
		return nil, errors.New("bundle not found in labels")
	}
	s, err := loadSpec(bundle + "/" + specConfig)
	if err != nil {
		return nil, err
	}
	p := s.Process
	if len(rest) < 2 {
		return nil, fmt.Errorf("%w: exec args cannot be empty", ErrUsage)
	}
	p.Args = rest[1:]
	if o.cwd != "" {
		p.Cwd = o.cwd
	}
	if o.apparmor != "" {
		p.ApparmorProfile = o.apparmor
	}
	if o.label != "" {
		p.SelinuxLabel = o.label
	}
	if len(o.caps) > 0 && p.Capabilities == nil {
		p.Capabilities = &specs.LinuxCapabilities{}
	}
	for _, cp := range o.caps {
		p.Capabilities.Bounding = append(p.Capabilities.Bounding, cp)
		p.Capabilities.Effective = append(p.Capabilities.Effective, cp)
		p.Capabilities.Permitted = append(p.Capabilities.Permitted, cp)
		if p.Capabilities.Inheritable != nil {
			p.Capabilities.Ambient = append(p.Capabilities.Ambient, cp)
		}
	}
	p.Env = append(p.Env, o.env...)
	p.Terminal = o.tty
	if noNewPrivsSet {
		p.NoNewPrivileges = o.noNewPrivs
	}
	if o.user != "" {
		uids, gids, hasGID := strings.Cut(o.user, ":")
		if hasGID {
			gid, err := strconv.Atoi(gids)
			if err != nil {
				return nil, fmt.Errorf("bad gid: %w", err)
			}
			p.User.GID = uint32(gid)
		}
		uid, err := strconv.Atoi(uids)
		if err != nil {
			return nil, fmt.Errorf("bad uid: %w", err)
		}
		p.User.UID = uint32(uid)
	}
	return p, validateProcessSpec(p)
}

// subCgroupPaths parses exec's --cgroup values, as runc's getSubCgroupPaths.
func subCgroupPaths(args []string) (map[string]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	paths := make(map[string]string, len(args))
	for _, c := range args {
		ctr, path, ok := strings.Cut(c, ":")
		if !ok {
			if len(args) != 1 {
				return nil, fmt.Errorf("%w: invalid --cgroup argument: %s (missing <controller>: prefix)", ErrUsage, c)
			}
			paths[""] = c
			continue
		}
		for _, ctrl := range strings.Split(ctr, ",") {
			if ctrl == "" {
				return nil, fmt.Errorf("%w: invalid --cgroup argument: %s (empty <controller> prefix)", ErrUsage, c)
			}
			if _, dup := paths[ctrl]; dup {
				return nil, fmt.Errorf("%w: invalid --cgroup argument(s): controller %s specified multiple times", ErrUsage, ctrl)
			}
			paths[ctrl] = path
		}
	}
	return paths, nil
}
