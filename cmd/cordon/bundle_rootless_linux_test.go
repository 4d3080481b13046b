package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBundleRootlessRunc: `cordon bundle` run by an unprivileged user
// (uid 4242 through setpriv, or the rootless lane's own user) writes a
// bundle that rootless runc (`runc --root $XDG_RUNTIME_DIR/runc run`) runs
// unchanged: a user namespace mapping only the caller's uid and gid (it
// once had none, and runc refused: "rootless container requires user
// namespaces"), no cgroups path; inside, the workspace is writable (the
// file lands owned by the caller), the system and a protect path are
// refused, and nothing reaches the host. The root case is
// TestBundleRunsUnderRuncAndCrun.
func TestBundleRootlessRunc(t *testing.T) {
	runc, err := exec.LookPath("runc")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("runc is missing (make deps installs it)")
		}
		t.Skip("no runc")
	}
	for _, u := range sessionUsers(t) {
		if u.prefix == nil && os.Geteuid() == 0 {
			continue // root: TestBundleRunsUnderRuncAndCrun
		}
		t.Run(u.name, func(t *testing.T) {
			uid := os.Geteuid()
			home := os.Getenv("HOME")
			for _, a := range u.prefix {
				if h, ok := strings.CutPrefix(a, "HOME="); ok {
					home, uid = h, 4242
				}
			}
			xdg := filepath.Join(home, fmt.Sprintf("xdg-%d", time.Now().UnixNano()))
			dir := filepath.Join(home, fmt.Sprintf("bundle-%d", time.Now().UnixNano()))
			t.Cleanup(func() { _ = os.RemoveAll(xdg); _ = os.RemoveAll(dir) })
			if err := os.Mkdir(xdg, 0o700); err != nil || os.Chown(xdg, uid, uid) != nil {
				t.Fatalf("XDG_RUNTIME_DIR %s: %v", xdg, err)
			}
			writeFile(t, filepath.Join(u.ws, ".git/config"), "[core]\n")
			for _, p := range []string{filepath.Join(u.ws, ".git"), filepath.Join(u.ws, ".git/config")} {
				if err := os.Chown(p, uid, uid); err != nil {
					t.Fatal(err)
				}
			}
			r := u.run(t, "", "bundle", dir, "--", "sh", "-c",
				"cat /proc/self/uid_map /proc/self/gid_map; echo hi > note.txt; echo x > /usr/cordon-bundle-rl; echo evil > .git/config; cat note.txt")
			if r.code != 0 {
				t.Fatalf("cordon bundle as %s: exit %d %s", u.name, r.code, r.stderr)
			}
			var cfg struct {
				Linux struct {
					UIDMappings []struct{ ContainerID, HostID, Size uint32 } `json:"uidMappings"`
					GIDMappings []struct{ ContainerID, HostID, Size uint32 } `json:"gidMappings"`
					Namespaces  []struct{ Type string }                      `json:"namespaces"`
					CgroupsPath string                                       `json:"cgroupsPath"`
				} `json:"linux"`
			}
			data, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil || json.Unmarshal(data, &cfg) != nil {
				t.Fatalf("config.json: %v", err)
			}
			userns := false
			for _, n := range cfg.Linux.Namespaces {
				userns = userns || n.Type == "user"
			}
			if !userns || len(cfg.Linux.UIDMappings) != 1 || cfg.Linux.UIDMappings[0].HostID != uint32(uid) || cfg.Linux.UIDMappings[0].Size != 1 ||
				len(cfg.Linux.GIDMappings) != 1 || cfg.Linux.GIDMappings[0].HostID != uint32(uid) || cfg.Linux.CgroupsPath != "" {
				t.Fatalf("the bundle maps no user namespace for uid %d: %+v", uid, cfg.Linux)
			}
			id := fmt.Sprintf("cordon-rl-%d", time.Now().UnixNano())
			argv := append(append([]string{}, u.prefix...), "env", "XDG_RUNTIME_DIR="+xdg, runc, "--root", filepath.Join(xdg, "runc"), "run", "--bundle", dir, id)
			c := exec.Command(argv[0], argv[1:]...)
			c.Dir = u.ws
			out, err := c.CombinedOutput()
			t.Logf("rootless runc run (%v):\n%s", err, out)
			if !strings.Contains(string(out), fmt.Sprintf("%d          1", uid)) || !strings.Contains(string(out), "hi") {
				t.Fatalf("rootless runc did not run the command in its user namespace: %v %q", err, out)
			}
			if !strings.Contains(string(out), "cannot create /usr/cordon-bundle-rl") || !strings.Contains(string(out), "cannot create .git/config") {
				t.Fatalf("rootless runc let a write through: %q", out)
			}
			if b, err := os.ReadFile(filepath.Join(u.ws, ".git/config")); err != nil || string(b) != "[core]\n" {
				t.Fatalf("the protected .git/config changed: %q %v", b, err)
			}
			if _, err := os.Lstat("/usr/cordon-bundle-rl"); err == nil {
				t.Fatal("/usr/cordon-bundle-rl exists on the host")
			}
			fi, err := os.Stat(filepath.Join(u.ws, "note.txt"))
			if err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
				t.Fatalf("the workspace write did not land as uid %d: %v", uid, err)
			}
			// A bundle refused at export (a limit this user's cgroups cannot
			// carry) leaves nothing: not the folder, nor a parent it made.
			refused := filepath.Join(home, fmt.Sprintf("refused-%d", time.Now().UnixNano()))
			t.Cleanup(func() { _ = os.RemoveAll(refused) })
			r = u.run(t, "", "bundle", filepath.Join(refused, "b"), "--memory", "64MiB", "--", "true")
			if r.code == 0 {
				t.Fatalf("a rootless bundle with a memory limit on this host was written: %s", r.stderr)
			}
			if _, err := os.Lstat(refused); err == nil {
				t.Errorf("the refused bundle left %s behind (%s)", refused, r.stderr)
			}
		})
	}
}
