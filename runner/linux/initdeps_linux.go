package linux

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// initFiles are the host files cordon's sandbox init needs to start: it is
// this binary (run as /proc/self/exe), so its ELF interpreter and the shared
// objects it has loaded. A static binary needs none.
var initFiles = sync.OnceValues(func() ([]string, error) {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("read this binary's ELF header: %w", err)
	}
	defer f.Close()
	var out []string
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return nil, fmt.Errorf("read this binary's ELF interpreter: %w", err)
		}
		out = append(out, strings.TrimRight(string(b), "\x00"))
	}
	if len(out) == 0 {
		return nil, nil // static: the init needs nothing from the host
	}
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("list this binary's shared objects: %w", err)
	}
	defer maps.Close()
	seen := map[string]bool{out[0]: true}
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		p := fields[5]
		if strings.HasPrefix(p, "/") && strings.Contains(p, ".so") && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out[1:])
	return out, sc.Err()
})

// checkInitRunnable refuses, before anything starts, a sandbox in which
// cordon's own PID 1 could not start: with `system: none` and no mount of
// the runtime directories, or with a `system: <rootfs>` directory that lacks
// them, the dynamically linked init finds no loader, and every command used
// to fail as "exec /proc/self/exe: no such file or directory" (issue 9,
// item 8). A file counts as there when the sandbox may read its path and
// the host file the path reaches exists.
func checkInitRunnable(t *mounts.Table, sb *spec.Sandbox) error {
	if sb.System.Kind != spec.SystemNone && sb.System.Kind != spec.SystemRootfs {
		return nil
	}
	files, err := initFiles()
	if err != nil {
		return fmt.Errorf("%w: system: %s: %w", runner.ErrSetup, sb.System.Kind, err)
	}
	var missing []string
	for _, f := range files {
		host, err := t.Resolve(f)
		if err == nil {
			_, err = os.Stat(host)
		}
		if err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if sb.System.Kind == spec.SystemRootfs {
		return fmt.Errorf("%w: system: %s lacks what cordon's sandbox init (this cordon binary, which is dynamically "+
			"linked) needs to start: %s, so no command could run; use a root filesystem with this host's C library at "+
			"those paths, or system: host", runner.ErrUnenforceable, sb.System.Rootfs, strings.Join(missing, ", "))
	}
	return fmt.Errorf("%w: system: none shows no runtime libraries, and cordon's sandbox init (this cordon binary, which is "+
		"dynamically linked) needs %s to start, so no command could run; mount the runtime directories read-only "+
		"(sandbox.mounts: %s, readonly: true, as the strict profile does), or use system: host",
		runner.ErrUnenforceable, strings.Join(missing, ", "), strings.Join(spec.ExistingDirs(spec.RuntimeDirs), ", "))
}
