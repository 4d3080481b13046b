package spec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// readonlyPaths are Docker's read-only paths and sb's protect paths,
// except those below a file (.git/hooks where .git is a linked worktree's
// or a submodule's .git file): nothing can exist there, and nothing can be
// made read-only; the broker refuses creating it.
func readonlyPaths(sb *Sandbox) []string {
	out := slices.Clone(dockerReadonlyPaths)
	for _, p := range sb.Protect {
		if !belowFile(sb, p) {
			out = append(out, p)
		}
	}
	return out
}

// belowFile reports whether the host path of sandbox path p lies below a
// file that is not a directory.
func belowFile(sb *Sandbox, p string) bool {
	z, ok := containingZone(sandboxZones(sb), p)
	if !ok {
		return false
	}
	host := filepath.Join(z.source, strings.TrimPrefix(strings.TrimPrefix(p, z.target), "/"))
	_, err := os.Lstat(host)
	return errors.Is(err, syscall.ENOTDIR)
}
