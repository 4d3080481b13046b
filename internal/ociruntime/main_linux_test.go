package ociruntime_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// The OCI tests drive real podman and containerd (ctr) against a real
// build of cordon reached through its cordon-oci link, since libcontainer
// re-executes that binary as each container's init. TestMain builds it
// once, and a small root filesystem (a static busybox) that the tests
// import as an image or hand to ctr as a rootfs.
var (
	ociBin  string // .../cordon-oci, a link to the built cordon
	rootfs  string // the busybox root filesystem
	workDir string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		// The quick loop: every test that starts a container skips (see
		// requireTool, requireRoot), so build no binary and no rootfs.
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "cordon-oci-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	workDir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if bin := os.Getenv("CORDON_OCI_BIN"); bin != "" {
		// The rootless lane hands over the binary it built as root.
		ociBin = bin
	} else {
		bin := filepath.Join(dir, "cordon")
		_, file, _, _ := runtime.Caller(0)
		pkg := filepath.Join(filepath.Dir(file), "..", "..", "cmd", "cordon")
		out, err := exec.Command("go", "build", "-tags", "seccomp netgo osusergo cordon_testhooks",
			"-ldflags", "-linkmode external -extldflags -static", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "go build ./cmd/cordon: %v\n%s", err, out)
			return 1
		}
		ociBin = filepath.Join(dir, "cordon-oci")
		if err := os.Symlink("cordon", ociBin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	rootfs = filepath.Join(dir, "rootfs")
	if err := makeRootfs(rootfs); err != nil {
		fmt.Fprintf(os.Stderr, "build the test root filesystem: %v\n", err)
		return 1
	}
	return m.Run()
}

// makeRootfs lays out a busybox root filesystem with the files the
// boundary tests deny and protect.
func makeRootfs(root string) error {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		return fmt.Errorf("no busybox (install busybox-static: make deps): %w", err)
	}
	for _, d := range []string{"bin", "etc", "data", "keys", "tmp", "proc", "dev", "sys", "repo/.git/hooks"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(bb)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), data, 0o755); err != nil {
		return err
	}
	for _, a := range []string{"sh", "true", "false", "sleep", "cat", "echo", "ls", "touch", "rm", "mv", "mkdir", "tty", "kill", "umount", "stat", "id", "nc", "grep", "printf"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", a)); err != nil {
			return err
		}
	}
	files := map[string]string{"etc/secret": "topsecret\n", "etc/app.conf": "cfg\n", "keys/k1": "key\n",
		"etc/passwd": "root:x:0:0:root:/:/bin/sh\n", "etc/group": "root:x:0:\n", "repo/.git/HEAD": "ref: refs/heads/main\n"}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			return err
		}
	}
	return os.Chmod(filepath.Join(root, "tmp"), 0o1777)
}
