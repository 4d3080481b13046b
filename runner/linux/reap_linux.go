package linux

import (
	"os"

	"github.com/cordon-run/cordon/runner"
)

// DefaultStateDir is the state directory New uses when Options.StateDir is
// empty: /run/cordon for root, $XDG_RUNTIME_DIR/cordon or $TMPDIR/cordon-UID
// otherwise. Named sessions keep their sockets under it, so the check that
// no sandbox ever mounts it covers them too.
func DefaultStateDir() string { return defaultStateDir() }

// Reap removes what runs and sessions whose cordon process died (SIGKILL)
// left in the state directory of opts: container state, cgroups,
// placeholders and rootfs skeletons. New runs and sessions do it anyway;
// `cordon session list` calls it so that a killed supervisor's leftovers go
// at once.
func Reap(opts runner.Options) error {
	dir := opts.StateDir
	if dir == "" {
		dir = defaultStateDir()
	}
	st, err := openStateDir(dir)
	if err != nil {
		return err
	}
	st.reapStale()
	if st.dir != "" && os.Geteuid() == 0 {
		st.sweepOrphanCgroups()
	}
	return nil
}
