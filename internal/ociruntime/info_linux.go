package ociruntime

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/capabilities"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/opencontainers/runtime-spec/specs-go/features"
)

// AnnotationVersion is the features annotation with cordon-oci's version.
const AnnotationVersion = "run.cordon.oci.version"

func featuresCmd(g *globals, args []string) (int, error) {
	if _, err := parseArgs(newFlags("features"), args, 0, false); err != nil {
		return -1, err
	}
	t, f := true, false
	feat := features.Features{
		OCIVersionMin: "1.0.0",
		OCIVersionMax: specs.Version,
		Annotations:   map[string]string{AnnotationVersion: g.version},
		Hooks:         configs.KnownHookNames(),
		MountOptions:  specconv.KnownMountOptions(),
		Linux: &features.Linux{
			Namespaces:   specconv.KnownNamespaces(),
			Capabilities: capabilities.KnownCapabilities(),
			Cgroup:       &features.Cgroup{V1: &t, V2: &t, Systemd: &t, SystemdUser: &t, Rdma: &t},
			Apparmor:     &features.Apparmor{Enabled: &t},
			Selinux:      &features.Selinux{Enabled: &t},
			IntelRdt:     &features.IntelRdt{Enabled: &t},
			MountExtensions: &features.MountExtensions{
				IDMap: &features.IDMap{Enabled: &t},
			},
			NetDevices: &features.NetDevices{Enabled: &f},
		},
		PotentiallyUnsafeConfigAnnotations: []string{"bundle", "org.systemd.property.", "org.criu.config"},
	}
	if seccomp.Enabled {
		feat.Linux.Seccomp = &features.Seccomp{
			Enabled: &t, Actions: seccomp.KnownActions(), Operators: seccomp.KnownOperators(),
			Archs: seccomp.KnownArchs(), KnownFlags: seccomp.KnownFlags(), SupportedFlags: seccomp.SupportedFlags(),
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "    ")
	return 0, enc.Encode(feat)
}

func listCmd(g *globals, args []string) (int, error) {
	fs := newFlags("list")
	var format string
	var quiet bool
	fs.StringVar(&format, "format", "table", "select one of: table or json")
	fs.StringVar(&format, "f", "table", "select one of: table or json")
	fs.BoolVar(&quiet, "quiet", false, "display only container IDs")
	fs.BoolVar(&quiet, "q", false, "display only container IDs")
	if _, err := parseArgs(fs, args, 0, false); err != nil {
		return -1, err
	}
	entries, err := os.ReadDir(g.root)
	if err != nil && !os.IsNotExist(err) {
		return -1, err
	}
	var states []containerState
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c, err := libcontainer.Load(g.root, e.Name())
		if err != nil {
			continue
		}
		if cs, err := stateOf(c); err == nil {
			states = append(states, cs)
		}
	}
	switch {
	case quiet:
		for _, s := range states {
			fmt.Println(s.ID)
		}
	case format == "json":
		if states == nil {
			states = []containerState{}
		}
		return 0, json.NewEncoder(os.Stdout).Encode(states)
	case format == "table":
		w := tabwriter.NewWriter(os.Stdout, 12, 1, 3, ' ', 0)
		fmt.Fprint(w, "ID\tPID\tSTATUS\tBUNDLE\tCREATED\tOWNER\n")
		for _, s := range states {
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", s.ID, s.InitProcessPid, s.Status, s.Bundle, s.Created.Format(time.RFC3339Nano), s.Owner)
		}
		return 0, w.Flush()
	default:
		return -1, fmt.Errorf("%w: invalid format %q; write table or json", ErrUsage, format)
	}
	return 0, nil
}

// psCmd answers `ps --format json ID` (the PIDs, which containerd's shim
// asks); the table form runs the host's ps in runc and is not supported.
func psCmd(g *globals, args []string) (int, error) {
	fs := newFlags("ps")
	var format string
	fs.StringVar(&format, "format", "table", "json (the table form is not supported)")
	fs.StringVar(&format, "f", "table", "json")
	rest, err := parseArgs(fs, args, 1, true)
	if err != nil {
		return -1, err
	}
	if format != "json" {
		return -1, fmt.Errorf("%w: ps --format %s; use ps --format json", ErrUnsupported, format)
	}
	c, err := getContainer(g, rest[0])
	if err != nil {
		return -1, err
	}
	pids, err := c.Processes()
	if err != nil {
		return -1, err
	}
	if pids == nil {
		pids = []int{}
	}
	return 0, json.NewEncoder(os.Stdout).Encode(pids)
}

func absPath(p string) (string, error) { return filepath.Abs(p) }
