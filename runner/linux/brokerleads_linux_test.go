package linux_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cordon-run/cordon/runner"
)

// TestIntegrationBrokerNoSymlinkAboveGuarded: a symlink at a directory
// that a deny or protect path lies below would send the host's later
// writes there (a secret it creates at a/b/.env, a hook) to where the
// link points, which no rule guards: `ln -s z a` with a/b/.env denied made
// the host's new secret readable as z/b/.env. No symlink is made, renamed
// carried in a renamed directory or hard-linked to such a place; the
// host's later write lands where the rule holds.
func TestIntegrationBrokerNoSymlinkAboveGuarded(t *testing.T) {
	sb := newSandbox(t)
	ws := sb.Root
	sb.Deny = append(sb.Deny, filepath.Join(ws, "a/b/.env"))
	sb.Protect = append(sb.Protect, filepath.Join(ws, "h/hooks"))
	for _, tc := range []struct{ name, script, blocked string }{
		{"symlink at a deny path's ancestor", "mkdir -p z/b && ln -s z a", "a"},
		{"symlink at its parent", "mkdir -p a z && ln -s ../z a/b", "a/b"},
		{"symlink renamed there", "mkdir -p z && ln -s z t1 && mv -T t1 a", "a"},
		{"symlink carried in a directory", "mkdir -p q z && ln -s ../z q/b && mv -T q a", "q"},
		{"symlink at a protect path's ancestor", "mkdir -p z && ln -s z h", "h"},
		// ln -P: linkat without AT_SYMLINK_FOLLOW, a second name for the
		// symlink itself (the second hostile review's route).
		{"hard link of a symlink", "mkdir -p z && ln -s z s2 && ln -P s2 a", "a"},
		{"hard link of a symlink at a protect path's ancestor", "mkdir -p z && ln -s z s3 && ln -P s3 h", "h"},
	} {
		_ = os.RemoveAll(filepath.Join(ws, "a"))
		out := run(t, sb, "", sh(tc.script)...)
		if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != filepath.Join(ws, tc.blocked) {
			t.Errorf("%s: %s: want sandbox_denied on %s, got %+v %s", tc.name, tc.script, tc.blocked, out.res, out.stderr)
		}
		for _, p := range []string{"a", "a/b", "h"} {
			if fi, err := os.Lstat(filepath.Join(ws, p)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				t.Fatalf("%s: %s is a symlink on the host", tc.name, p)
			}
		}
	}
	// A symlink elsewhere, and one below the guarded path's level, stay
	// ordinary work.
	if out := run(t, sb, "", sh("rm -rf a && mkdir -p a/b && ln -s .env.example a/b/link && ln -s z other")...); out.res.ExitCode != 0 {
		t.Fatalf("ordinary symlinks refused: %+v %s", out.res, out.stderr)
	}
}
