package spec

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitEntriesAsGit: the host's configs are read for what they name as
// code (gitEntries) with the values git reads, so that a sandbox's
// core.worktree (which package decide takes only in forms whose reading
// is not in doubt) or a host's hooksPath is followed where git goes: a
// trailing vertical tab or no-break space is kept, quoted white space
// kept, \b unescaped. Each value is checked against the real git.
func TestGitEntriesAsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for i, val := range []string{
		"../../../lib", "../../../lib\v", "../../../lib\f", "\u00a0../lib", "../../../lib\u00a0",
		"\"../../../lib \"", "\"../../../lib\"  # c", "../.\".\"/x", "a\\bb", "a  b", "\"a\\\"b\\\\c\" ;d",
		"x #\"y\"", "\" a\"\t",
	} {
		f := filepath.Join(dir, "c"+string(rune('a'+i)))
		if err := os.WriteFile(f, []byte("[core]\n\tworktree = "+val+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("git", "config", "-f", f, "--get", "core.worktree").Output()
		if err != nil {
			t.Fatalf("git config %q: %v", val, err)
		}
		want := strings.TrimSuffix(string(out), "\n")
		es := gitEntries(f)
		if len(es) != 1 || es[0].key != "core.worktree" || es[0].val != want {
			t.Errorf("%q: gitEntries = %+q, git reads %q", val, es, want)
		}
	}
}
