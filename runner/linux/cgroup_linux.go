package linux

import "github.com/cordon-run/cordon/runner/linux/internal/cgroup"

// PrewarmCgroups starts the cgroup-lock prewarm early, for a caller (the
// CLI) that knows a run as root is coming; it does nothing when not root.
func PrewarmCgroups() { cgroup.PrewarmCgroups() }
