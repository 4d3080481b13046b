package spec

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHostPath(t *testing.T) {
	sb := &Sandbox{
		Root:   "/home/u/proj",
		Mounts: []Mount{{Source: "/data/cache", Target: "/cache"}, {Source: "/home/u/other", Target: "/home/u/proj/vendor"}},
		System: System{Kind: SystemHost},
	}
	rootfs := &Sandbox{Root: "/ws", System: System{Kind: SystemRootfs, Rootfs: "/srv/rootfs"}}
	none := &Sandbox{Root: "/ws", System: System{Kind: SystemNone}}
	for _, c := range []struct {
		name string
		sb   *Sandbox
		p    string
		host string
		ok   bool
	}{
		{"workspace", sb, "/home/u/proj/.env", "/home/u/proj/.env", true},
		{"workspace root", sb, "/home/u/proj", "/home/u/proj", true},
		{"mount elsewhere", sb, "/cache/a/.env", "/data/cache/a/.env", true},
		{"innermost zone wins", sb, "/home/u/proj/vendor/x/.env", "/home/u/other/x/.env", true},
		{"system dir at its own path", sb, "/etc/app/secret", "/etc/app/secret", true},
		{"private tmp shows nothing of the host", sb, "/tmp/x", "", false},
		{"a name that only starts like a zone", sb, "/home/u/projx/.env", "", false},
		{"rootfs", rootfs, "/etc/x", "/srv/rootfs/etc/x", true},
		{"workspace over the rootfs", rootfs, "/ws/.env", "/ws/.env", true},
		{"system none", none, "/etc/x", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			host, ok := HostPath(c.sb, c.p)
			if host != c.host || ok != c.ok {
				t.Fatalf("HostPath(%s) = %q, %v; want %q, %v", c.p, host, ok, c.host, c.ok)
			}
		})
	}
}

func TestLiteralPrefix(t *testing.T) {
	for p, want := range map[string]string{
		"/ws/**/.env":         "/ws",
		"/ws/sub/*.pem":       "/ws/sub",
		"/ws/.env":            "/ws/.env",
		"/ws/a/[bc]/d/**/key": "/ws/a",
	} {
		if got := LiteralPrefix(p); got != want {
			t.Errorf("LiteralPrefix(%s) = %s, want %s", p, got, want)
		}
	}
}

// TestHostPathResolvedSources: the deny watcher maps a sandbox path to
// the directory a mount shows, which its walk (that never follows a link)
// can read: with a mount whose source is a symbolic link to the root's
// sub, /al/late.pem is <root>/sub/late.pem, not a path through the link;
// a mount without a target stays at its source path; sb is unchanged.
func TestHostPathResolvedSources(t *testing.T) {
	ws, other := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	lnk := filepath.Join(other, "lnk")
	if err := os.Symlink(filepath.Join(ws, "sub"), lnk); err != nil {
		t.Fatal(err)
	}
	sb := &Sandbox{Root: ws, Mounts: []Mount{{Source: lnk, Target: "/al"}, {Source: lnk}}}
	r := WithResolvedSources(sb)
	for _, c := range []struct{ p, want string }{
		{"/al/late.pem", filepath.Join(ws, "sub", "late.pem")},
		{"/al", filepath.Join(ws, "sub")},
		{lnk + "/late.pem", filepath.Join(ws, "sub", "late.pem")},
		{ws + "/sub/late.pem", filepath.Join(ws, "sub", "late.pem")},
	} {
		if got, ok := HostPath(r, c.p); !ok || got != c.want {
			t.Errorf("HostPath(%s) = %q, %v; want %q", c.p, got, ok, c.want)
		}
	}
	if sb.Mounts[0].Source != lnk || sb.Mounts[1].Target != "" {
		t.Errorf("WithResolvedSources changed sb: %+v", sb.Mounts)
	}
}
