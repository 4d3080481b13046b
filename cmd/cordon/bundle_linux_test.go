package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/testenv"
)

// TestBundleRunsUnderRuncAndCrun writes a bundle with `cordon bundle` and
// runs it with stock runc and crun: the workspace is writable, the system
// read-only, a protect path that exists (.git/config) is guarded, and one
// that did not exist at export time (.git/hooks) is listed as what only
// cordon run enforces, never made on the host: `cordon bundle` leaves the
// workspace as it was (it once made 20 placeholder directories there,
// .git/commondir among them, which broke the host's git); config.json
// declares what those runtimes take.
func TestBundleRunsUnderRuncAndCrun(t *testing.T) {
	testenv.RequireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("stock runc and crun run bundles as root here")
	}
	script := "echo hi > note.txt; echo x > /usr/cordon-bundle-x; echo evil > .git/hooks/pre-commit; echo evil > .git/config; cat note.txt"
	for _, rt := range []string{"runc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			bin, err := exec.LookPath(rt)
			if err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is missing (make deps installs it)", rt)
				}
				t.Skipf("no %s", rt)
			}
			ws := t.TempDir()
			if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil { // no hooks yet
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(ws, ".git/config"), "[core]\n")
			before := listTree(t, ws)
			dir := filepath.Join(t.TempDir(), "bundle")
			r := runCLI(t, ws, "bundle", dir, "--profile", "workspace", "--", "sh", "-c", script)
			if r.code != 0 || !strings.Contains(r.stderr, "only cordon run enforces") || !strings.Contains(r.stderr, ".git/hooks") {
				t.Fatalf("cordon bundle: exit %d %q", r.code, r.stderr)
			}
			if after := listTree(t, ws); !slices.Equal(before, after) {
				t.Fatalf("cordon bundle changed the workspace:\nbefore %v\nafter  %v", before, after)
			}
			var cfg struct {
				OCIVersion string `json:"ociVersion"`
				Root       struct {
					Path     string `json:"path"`
					Readonly bool   `json:"readonly"`
				} `json:"root"`
				Linux struct {
					CgroupsPath string `json:"cgroupsPath"`
				} `json:"linux"`
				Annotations map[string]string `json:"annotations"`
			}
			data, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil || json.Unmarshal(data, &cfg) != nil {
				t.Fatalf("config.json: %v", err)
			}
			if cfg.OCIVersion != "1.0.2" || cfg.Root.Path != "rootfs" || !cfg.Root.Readonly || cfg.Linux.CgroupsPath != "" ||
				!strings.Contains(cfg.Annotations["run.cordon.only-cordon-run"], "limits.timeout") {
				t.Fatalf("config.json is not a stock bundle: %+v", cfg)
			}
			id := fmt.Sprintf("cordon-test-%s-%d", rt, time.Now().UnixNano())
			run := exec.Command(bin, "run", "--bundle", dir, id)
			if rt == "crun" && isMountPoint("/sys/fs/cgroup/unified") {
				// crun refuses a cgroup v1 host with a cgroup2 mount
				// beside it (hybrid); hide that mount from it.
				run = exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
					`umount /sys/fs/cgroup/unified && exec "$0" run --bundle "$1" "$2"`, bin, dir, id)
			}
			out, _ := run.CombinedOutput()
			t.Logf("%s run:\n%s", rt, out)
			if !strings.Contains(string(out), "hi") {
				t.Fatalf("%s did not run the command: %q", rt, out)
			}
			if !strings.Contains(string(out), "cannot create /usr/cordon-bundle-x") || !strings.Contains(string(out), "cannot create .git/hooks/pre-commit") ||
				!strings.Contains(string(out), "cannot create .git/config") {
				t.Fatalf("%s let a write through: %q", rt, out)
			}
			if b, err := os.ReadFile(filepath.Join(ws, ".git/config")); err != nil || string(b) != "[core]\n" {
				t.Fatalf("%s changed the protected .git/config: %q %v", rt, b, err)
			}
			for _, p := range []string{"/usr/cordon-bundle-x", filepath.Join(ws, ".git/hooks/pre-commit")} {
				if _, err := os.Lstat(p); err == nil {
					t.Fatalf("%s exists on the host after the %s run", p, rt)
				}
			}
			if b, err := os.ReadFile(filepath.Join(ws, "note.txt")); err != nil || string(b) != "hi\n" {
				t.Fatalf("the workspace write did not land: %q %v", b, err)
			}
		})
	}
}

func isMountPoint(p string) bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == p {
			return true
		}
	}
	return false
}

// listTree lists every path below dir (relative, sorted), for a before
// and after comparison.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, strings.TrimPrefix(p, dir))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
