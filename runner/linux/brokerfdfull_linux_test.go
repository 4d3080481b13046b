package linux_test

import (
	"path/filepath"
	"testing"
)

// fullTable fills its descriptor table, then creates a file: the open
// fails with EMFILE, as the kernel's would.
const fullTable = `
import os, resource
resource.setrlimit(resource.RLIMIT_NOFILE, (20, 20))
try:
    while True:
        os.open("/dev/null", os.O_RDONLY)
except OSError:
    pass
try:
    os.open("newfile", os.O_CREAT | os.O_WRONLY, 0o644)
except OSError:
    pass
`

// TestIntegrationBrokerCreateIntoFullTable: an open that creates a file
// and cannot be given its descriptor (a full table) leaves no file on the
// host, as the kernel's open does (git's next lock would otherwise find a
// stale index.lock).
func TestIntegrationBrokerCreateIntoFullTable(t *testing.T) {
	sb := newSandbox(t)
	out := run(t, sb, "", "python3", "-c", fullTable)
	if out.res.ExitCode != 0 {
		t.Fatalf("the script failed: exit %d, %s", out.res.ExitCode, out.stderr)
	}
	mustNotExist(t, filepath.Join(sb.Root, "newfile"))
}
