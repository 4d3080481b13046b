package broker

import "testing"

// TestDotName: the paths the broker opens whole, as a directory, are those
// ending in ".", ".." or nothing (the root); no other name is.
func TestDotName(t *testing.T) {
	for p, want := range map[string]bool{
		"/": true, "/a/.": true, "/a/..": true, "/a/./": true, "/a/../": true, "//": true,
		"/a": false, "/a/.b": false, "/a/..b": false, "/a/b/": false, "/.env": false,
	} {
		if got := dotName(p); got != want {
			t.Errorf("dotName(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestProcLinks: /proc/N/root/REST is REST in the sandbox's root (a
// thread's too); anything that is not a pid's root or cwd link is left
// alone (false), so a hostile name cannot pose as one.
func TestProcLinks(t *testing.T) {
	c := &call{pid: -1, b: &Broker{}} // no /proc entry: only the cwd case would read one
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"/proc/12/root", "/", true},
		{"/proc/12/root/work/.env", "/work/.env", true},
		{"/proc/12/task/13/root/a/b/c/d", "/a/b/c/d", true},
		{"/proc/12/status", "", false},
		{"/proc/x12/root/etc", "", false},
		{"/proc/12/task/x/root/etc", "", false},
		{"/proc/12/rootx/etc", "", false},
		{"/proc/12/cwd/a", "", false}, // pid -1: no cwd to read, left alone
	} {
		got, ok := c.procLinks(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("procLinks(%q) = %q %v, want %q %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
