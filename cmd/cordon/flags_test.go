package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunEnvAllowAndDockerMountFlags: -e/--env, --allow, docker's -v and
// --mount type=bind forms reach the sandbox as the config's own keys would.
func TestRunEnvAllowAndDockerMountFlags(t *testing.T) {
	ws := t.TempDir()
	data := t.TempDir()
	writeFile(t, filepath.Join(data, "f"), "from the host\n")
	t.Setenv("CORDON_FLAG_PASS", "passed")
	script := `echo "$CORDON_FLAG_SET|$CORDON_FLAG_PASS"; cat /mnt/long/f /mnt/short/f; touch /mnt/long/new 2>/dev/null && echo wrote-long; touch /mnt/short/new && echo wrote-short`
	r := runCLI(t, ws, "run", "--profile", "workspace", "-e", "CORDON_FLAG_SET=a b", "--env", "CORDON_FLAG_PASS",
		"--mount", "type=bind,source="+data+",target=/mnt/long,readonly", "-v", data+":/mnt/short",
		"--", "sh", "-c", script)
	want := "a b|passed\nfrom the host\nfrom the host\nwrote-short\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("run: exit %d stdout %q stderr %q; want 0 and %q", r.code, r.stdout, r.stderr, want)
	}
	if _, err := os.Stat(filepath.Join(data, "new")); err != nil {
		t.Fatalf("the -v mount was not writable: %v", err)
	}

	r = runCLI(t, ws, "explain", "--profile", "workspace", "--allow", "Example.test:8443", "--allow", "*.example.org")
	if r.code != 0 || !strings.Contains(r.stdout, "example.test:8443") || !strings.Contains(r.stdout, "*.example.org") {
		t.Fatalf("explain --allow: exit %d stdout %q stderr %q; want both entries listed", r.code, r.stdout, r.stderr)
	}

	marker := filepath.Join(ws, "ran")
	for _, tc := range []struct{ flag, value, problem string }{
		{"--allow", "http://x.test/", "is not host[:port]"},
		{"--allow", "*", "a bare * allows every host"},
		{"-e", "1BAD=x", "is not a variable name"},
		{"--mount", "type=volume,source=x,target=/y", "only type=bind is supported"},
		{"--mount", "type=bind,target=/y", "source and target are required"},
		{"--mount", "type=bind,source=" + data + ",target=/y,propagation=shared", `"propagation" is not a key cordon takes`},
	} {
		r := runCLI(t, ws, "run", "--profile", "workspace", tc.flag, tc.value, "--", "touch", marker)
		if r.code != exitConfig || !strings.Contains(r.stderr, tc.problem) {
			t.Errorf("%s %s: exit %d %q; want 2 and %q", tc.flag, tc.value, r.code, r.stderr, tc.problem)
		}
		if fileExists(marker) {
			t.Fatalf("%s %s: the command ran", tc.flag, tc.value)
		}
	}
}
