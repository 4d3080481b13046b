package ociruntime_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// handleWriter opens argv[1] through a file handle (name_to_handle_at,
// then open_by_handle_at on the container's root, a writable mount) for
// appending, and appends argv[2]: the open is no path open, so the broker
// never saw it, and the handle's mount is the root's, not the read-only
// bind of a protected path.
const handleWriter = `#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
	struct file_handle *h = malloc(sizeof(*h) + MAX_HANDLE_SZ);
	int mount_id, root, fd;
	h->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(AT_FDCWD, argv[1], h, &mount_id, 0) < 0) { perror("name_to_handle_at"); return 2; }
	root = open("/", O_RDONLY | O_DIRECTORY);
	fd = open_by_handle_at(root, h, O_WRONLY | O_APPEND);
	if (fd < 0) { perror("open_by_handle_at"); return 3; }
	if (write(fd, argv[2], strlen(argv[2])) < 0) { perror("write"); return 4; }
	puts("written");
	return 0;
}
`

// TestOCIOpenByHandleRefused is the security property "a capability the
// container may have is no way around the broker": podman's profile (as
// Docker's) allows open_by_handle_at to a container with
// CAP_DAC_READ_SEARCH, and the call opens a file by its handle, not its
// path, so the broker never decided it, and on the container's root mount,
// past the read-only bind of a protected path: a protected file was
// written. Under the annotations it fails with ENOSYS, and the file is
// unchanged. Root podman (rootless, the capability is its user
// namespace's, which the call does not accept: refused either way).
func TestOCIOpenByHandleRefused(t *testing.T) {
	requirePodmanUser(t)
	requireTool(t, "gcc")
	p := newPodman(t)
	src := filepath.Join(p.dir, "handle.c")
	if err := os.WriteFile(src, []byte(handleWriter), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-static", "-o", filepath.Join(p.dir, "handle"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	script := "/host/handle /etc/app.conf pwned; echo exit $?; cat /etc/app.conf"
	args := append(p.runArgs(append([]string{"--rm", "-v", p.dir + ":/host", "--cap-add", "DAC_READ_SEARCH"},
		annotation("run.cordon.protect", "/etc/app.conf")...)...), p.image, "sh", "-c", script)
	r := p.run(t, args...)
	if r.code != 0 || strings.Contains(r.stdout, "written") || strings.Contains(r.stdout, "pwned") || !strings.Contains(r.stdout, "cfg\n") {
		t.Errorf("exit %d stdout %q stderr %q; want the open refused and /etc/app.conf unchanged", r.code, r.stdout, r.stderr)
	}
	if os.Geteuid() == 0 && !strings.Contains(r.stderr, "Function not implemented") {
		t.Errorf("stderr %q; want open_by_handle_at refused with ENOSYS", r.stderr)
	}
	// Without the annotations the same write lands: the test can fail.
	if os.Geteuid() == 0 {
		args = append(p.runArgs("--rm", "-v", p.dir+":/host", "--cap-add", "DAC_READ_SEARCH"), p.image, "sh", "-c", script)
		if r := p.run(t, args...); !strings.Contains(r.stdout, "written") {
			t.Errorf("without annotations: exit %d stdout %q stderr %q; want the file written", r.code, r.stdout, r.stderr)
		}
	}
}
