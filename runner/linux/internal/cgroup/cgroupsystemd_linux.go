package cgroup

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"

	"github.com/cordon-run/cordon/runner"
)

// The systemd way to rootless limits: the user's own systemd (user@.service,
// which systemd gives the memory, pids and cpu controllers) creates a
// transient scope with Delegate=yes for each limited run when asked over
// the user's D-Bus, as podman and runc --systemd-cgroup do. libcontainer's
// systemd cgroup manager asks; cordon only finds out whether anyone answers,
// and which controllers the user's systemd has to give.

// userBusAddress reports whether this process has a user D-Bus to ask:
// DBUS_SESSION_BUS_ADDRESS, or $XDG_RUNTIME_DIR/bus, as libcontainer looks.
func userBusAddress() bool {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		return true
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		if _, err := os.Stat(filepath.Join(x, "bus")); err == nil {
			return true
		}
	}
	return false
}

// probeSystemdUser asks the user's systemd over D-Bus for its cgroup. It
// returns false when there is no user bus or no systemd on it.
func probeSystemdUser() (runner.Delegation, bool) {
	if !userBusAddress() {
		return runner.Delegation{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := sdbus.NewUserConnectionContext(ctx)
	if err != nil {
		return runner.Delegation{}, false
	}
	defer conn.Close()
	v, err := conn.GetManagerProperty("ControlGroup")
	if err != nil {
		return runner.Delegation{}, false
	}
	if u, err := strconv.Unquote(v); err == nil {
		v = u
	}
	if v == "" || !strings.HasPrefix(v, "/") {
		return runner.Delegation{}, false
	}
	data, err := os.ReadFile(filepath.Join(cgroupRoot, v, "cgroup.controllers"))
	if err != nil {
		return runner.Delegation{}, false
	}
	return runner.Delegation{Base: v, Controllers: strings.Fields(string(data)), Systemd: true}, true
}

// IsSystemdCgroupsPath reports whether p is libcontainer's systemd form,
// "slice:prefix:name", rather than a cgroupfs path.
func IsSystemdCgroupsPath(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/")
}
