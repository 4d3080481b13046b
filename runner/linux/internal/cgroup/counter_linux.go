package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
)

// PidsEventsFile is c's pids.events, or "" when c has no pids cgroup.
func PidsEventsFile(c *libcontainer.Container) string {
	controller := "pids"
	if cgroups.IsCgroup2UnifiedMode() {
		controller = ""
	}
	return File(c, controller, "pids.events")
}

// File is the path of file in c's cgroup of controller ("" on
// cgroup v2), or "" when c has none.
func File(c *libcontainer.Container, controller, file string) string {
	st, err := c.State()
	if err != nil || st.CgroupPaths[controller] == "" {
		return ""
	}
	return filepath.Join(st.CgroupPaths[controller], file)
}

// Counter is the value of key in a cgroup file of "key value" lines
// (memory.events, pids.events), 0 when file is "" or has no such line.
func Counter(file, key string) int64 {
	if file == "" {
		return 0
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}
