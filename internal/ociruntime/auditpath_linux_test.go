package ociruntime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOCIAuditPathRefused is the security property "whoever writes the
// annotations chooses no file the runtime writes outside its audit
// folder": run.cordon.audit is set by the bundle's author (a pod's author,
// with pod_annotations), and the runtime (root on a node) appended the
// start record, which carries the container's command, to any host file
// it names: a `$(...)` in the command appended to /root/.bashrc runs as
// root at the next login. A path outside the runtime's audit folder
// (--audit-dir), one that leaves it by "..", and one through a symbolic
// link in it are refused at create with the annotation's name; the
// container's command does not run, and the target file is unchanged (or
// still missing). Root and rootless podman.
func TestOCIAuditPathRefused(t *testing.T) {
	requirePodmanUser(t)
	p := newPodman(t)
	victim := filepath.Join(p.dir, "victim")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	const rc = "# the host's own shell start file\n"
	bashrc := filepath.Join(victim, ".bashrc")
	if err := os.WriteFile(bashrc, []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p.auditDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(p.auditDir, "link")); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(p.dir, "ran")
	rows := []struct{ name, path, file string }{
		{"outside", bashrc, bashrc},
		{"new file outside", filepath.Join(victim, "profile.sh"), filepath.Join(victim, "profile.sh")},
		{"dot-dot", p.auditDir + "/../victim/.bashrc", bashrc},
		{"symlinked folder", filepath.Join(p.auditDir, "link", ".bashrc"), bashrc},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(bashrc, []byte(rc), 0o600); err != nil {
				t.Fatal(err)
			}
			_ = os.Remove(marker)
			args := append(p.runArgs("--rm", "-v", p.dir+":/host", "--annotation", "run.cordon.audit="+tc.path),
				p.image, "sh", "-c", "touch /host/ran; : $(touch /host/pwned)")
			r := p.run(t, args...)
			if r.code == 0 || !strings.Contains(r.stderr, "annotation run.cordon.audit") || !strings.Contains(r.stderr, "--audit-dir") {
				t.Errorf("exit %d stderr %q; want create refused, naming run.cordon.audit and --audit-dir", r.code, r.stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the refused container's command ran")
			}
			got, err := os.ReadFile(tc.file)
			switch {
			case tc.file == bashrc && string(got) != rc:
				t.Errorf("%s was written: %q", bashrc, got)
			case tc.file != bashrc && err == nil:
				t.Errorf("%s was made: %q", tc.file, got)
			}
		})
	}
}
