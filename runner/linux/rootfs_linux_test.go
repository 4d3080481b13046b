package linux_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cordon-run/cordon/runner"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
	"github.com/cordon-run/cordon/spec"
)

// treeOf lists every path under dir with its type and size, sorted.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %s %d", strings.TrimPrefix(p, dir), fi.Mode(), fi.Size()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestIntegrationSharedRootfsCannotBeWritten is the safety property of the
// rootfs skeleton that runs of one layout share (rootfs_linux.go): a
// sandbox cannot add, change or remove anything in it, so no run can leave
// a name or a file for the next one. As root and rootless (the rootless
// lane runs every Integration test as uid 4242).
func TestIntegrationSharedRootfsCannotBeWritten(t *testing.T) {
	sb := newSandbox(t)
	state := t.TempDir()
	r, err := runnerlinux.New(runner.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	runIn := func(args ...string) (runner.Result, string) {
		t.Helper()
		var so, se strings.Builder
		res, err := r.Run(context.Background(), runner.Request{Sandbox: sb, Args: args, Stdout: &so, Stderr: &se})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("%v -> exit %d %s; stderr: %s", args, res.ExitCode, res.FailureType, se.String())
		return res, so.String()
	}
	res, first := runIn("/bin/sh", "-c", "ls -a /; ls -a /root 2>/dev/null; true")
	if res.ExitCode != 0 {
		t.Fatalf("first run: %+v", res)
	}
	roots, err := os.ReadDir(filepath.Join(state, "roots"))
	if err != nil || len(roots) != 1 {
		t.Fatalf("want one rootfs skeleton after a run, got %v (%v)", roots, err)
	}
	skel := filepath.Join(state, "roots", roots[0].Name(), "rootfs")
	before := treeOf(t, skel)
	// Every way a command could write the root: new names at the top and
	// in mount point directories, the mount point files, a removal.
	runIn("/bin/sh", "-c", `for p in /cordon-x /root/cordon-y /proc/../cordon-z /tmp/../cordon-w; do
		mkdir "$p"; echo x > "$p.f"; done
		for f in /* /root/.config/cordon/trusted; do echo x >> "$f"; done
		rmdir /proc /dev /root 2>/dev/null; mv /usr /cordon-usr 2>/dev/null; true`)
	if after := treeOf(t, skel); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("the sandbox changed the shared rootfs skeleton:\nbefore %v\nafter  %v", before, after)
	}
	res, second := runIn("/bin/sh", "-c", "ls -a /; ls -a /root 2>/dev/null; true")
	if res.ExitCode != 0 || second != first {
		t.Fatalf("the next run of the layout sees another root: %q, first %q (%+v)", second, first, res)
	}
	if roots2, _ := os.ReadDir(filepath.Join(state, "roots")); len(roots2) != 1 {
		t.Fatalf("runs of one layout did not share one skeleton: %v", roots2)
	}
}

// TestIntegrationSharedRootfsFirstRunsAtOnce: runs of a layout no run has
// made yet, started at once, all succeed (one makes the skeleton, the
// others wait for it, none races it) and share one skeleton.
func TestIntegrationSharedRootfsFirstRunsAtOnce(t *testing.T) {
	sb := newSandbox(t)
	state := t.TempDir()
	// A file mount point at a path no other mount holds: libcontainer
	// makes it in the skeleton with O_EXCL, which two makers would race.
	src := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb.Mounts = append(sb.Mounts, spec.Mount{Source: src, Target: "/cordon-test-file", Readonly: true})
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := runnerlinux.New(runner.Options{StateDir: state})
			if err == nil {
				var res runner.Result
				res, err = r.Run(context.Background(), runner.Request{Sandbox: sb, Args: []string{"true"}})
				if err == nil && res.ExitCode != 0 {
					err = fmt.Errorf("exit %d %s: %s", res.ExitCode, res.FailureType, res.FailureDetail)
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	roots, _ := os.ReadDir(filepath.Join(state, "roots"))
	if len(roots) != 1 {
		t.Fatalf("runs of one layout did not share one skeleton: %v", roots)
	}
	if _, err := os.Stat(filepath.Join(state, "roots", roots[0].Name(), "rootfs", "cordon-test-file")); err != nil {
		t.Fatalf("the file mount point is not in the skeleton: %v", err)
	}
}
