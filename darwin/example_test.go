package darwin_test

import (
	"fmt"
	"strings"

	"github.com/cordon-run/cordon/darwin"
	"github.com/cordon-run/cordon/spec"
)

func ExampleProfile() {
	sb := &spec.Sandbox{
		Root:             "/Users/dev/proj",
		Deny:             []string{"/Users/dev/proj/.env"},
		System:           spec.System{Kind: spec.SystemHost},
		RequireOSSandbox: true,
	}
	// A fixed canonicalizer keeps the example independent of this host.
	same := func(p string) string { return p }
	prof, err := darwin.Profile(sb, darwin.ProfileOptions{Tag: "cordon-example", Canon: same})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(prof, "\n") {
		if strings.HasPrefix(line, "(version") || strings.HasPrefix(line, "(deny default") ||
			strings.Contains(line, `"/Users/dev/proj"`) || strings.Contains(line, "network*") {
			fmt.Println(line)
		}
	}
	// Output:
	// (version 1)
	// (deny default (with message "cordon-example"))
	// (allow file-read* (subpath "/Users/dev/proj"))
	// (allow file-write* (subpath "/Users/dev/proj"))
	// (deny network* (with message "cordon-example"))
}

func ExampleUnsupported() {
	sb := &spec.Sandbox{
		Root:   "/Users/dev/proj",
		Mounts: []spec.Mount{{Source: "/Users/dev/cache", Target: "/cache"}},
		Limits: spec.Limits{Memory: 512 << 20},
	}
	refused, degraded := darwin.Unsupported(sb) // RequireOSSandbox is false: limits degrade
	fmt.Println(refused)
	fmt.Println(degraded)
	// Output:
	// [mount /Users/dev/cache at /cache: Seatbelt cannot remap paths, so a mount's target must equal its source; remapped mounts work on Linux]
	// [memory limit (512MiB): not enforced on macOS; this works on Linux (cgroups)]
}

func ExampleParseDenials() {
	log := "kernel: (Sandbox) Sandbox: touch(4242) deny(1) file-write-create /Users/dev/proj/.git/hooks/pre-commit\n" +
		"python3: PermissionError: [Errno 1] Operation not permitted: '/Users/dev/.ssh/id_ed25519'\n"
	for _, d := range darwin.ParseDenials(log) {
		fmt.Printf("%d %q %q %s\n", d.PID, d.Process, d.Operation, d.Path)
	}
	// Output:
	// 4242 "touch" "file-write-create" /Users/dev/proj/.git/hooks/pre-commit
	// 0 "" "" /Users/dev/.ssh/id_ed25519
}
