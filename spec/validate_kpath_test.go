package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostPathDotDotAfterLink: a config path (a mount source, the root, a
// deny or protect entry) whose ".." follows a symbolic link is refused,
// naming both places: the kernel takes it to the link target's parent,
// where a lexical clean names another directory (issue 21: no check
// cleans ".." before resolving).
func TestHostPathDotDotAfterLink(t *testing.T) {
	d := t.TempDir()
	for _, p := range []string{"ws/src", "elsewhere/inner", "ws/x"} {
		if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(d, "elsewhere/inner"), filepath.Join(d, "ws/lnk")); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(d, "ws")
	for _, tc := range []struct {
		in, want, prob string
	}{
		{"src", filepath.Join(ws, "src"), ""},
		{"src/../x", filepath.Join(ws, "x"), ""},
		{"lnk/../x", "", "after the symbolic link"},
		{"lnk/../../ws/x", "", "after the symbolic link"}, // /ws/x both ways, by chance
		{"lnk/../../elsewhere", "", "after the symbolic link"},
		{"lnk/inner2/../x", "", "after the symbolic link"}, // inner2 may appear in the link's target
		{"new/../x", filepath.Join(ws, "x"), ""},
	} {
		got, prob := hostPath(tc.in, ws)
		if got != tc.want || !strings.Contains(prob, tc.prob) || (tc.prob == "") != (prob == "") {
			t.Errorf("hostPath(%q) = %q, %q; want %q and a problem with %q", tc.in, got, prob, tc.want, tc.prob)
		}
	}
}
