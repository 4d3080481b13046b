package ociruntime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// annotation is podman's --annotation for a comma-separated list: podman
// splits its flag values on commas unless the value is quoted CSV-style.
func annotation(key, value string) []string {
	return []string{"--annotation", `"` + key + "=" + value + `"`}
}

// TestOCIDenyProtectHeld runs a container with run.cordon.deny and
// run.cordon.protect: each attempt is refused with its error, and the
// files are unchanged afterwards.
func TestOCIDenyProtectHeld(t *testing.T) {
	requirePodmanUser(t)
	p := newPodman(t)
	flags := append(annotation("run.cordon.deny", "/etc/secret,/keys,/absent"),
		annotation("run.cordon.protect", "/etc/app.conf,/data,/missing")...)
	tests := []struct {
		name, cmd, wantErr string
	}{
		{"read a denied file", "cat /etc/secret", "Permission denied"},
		{"write a denied file", "echo x > /etc/secret", "Permission denied"},
		{"list a denied dir", "ls /keys/k1", "No such file or directory"},
		{"create in a denied dir", "touch /keys/new", "Permission denied"},
		{"create in a missing denied path", "mkdir /absent/x", "Permission denied"},
		{"write a protected file", "echo y >> /etc/app.conf", "Permission denied"},
		{"remove a protected file", "rm /etc/app.conf", "Permission denied"},
		{"rename a protected file", "mv /etc/app.conf /tmp/x", "Permission denied"},
		{"unmount a protected file", "umount /etc/app.conf", "Operation not permitted"},
		{"create in a protected dir", "touch /data/f", "Permission denied"},
		{"create a missing protected path", "mkdir /missing", "Permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(p.runArgs(append([]string{"--rm"}, flags...)...), p.image, "sh", "-c", tc.cmd)
			r := p.run(t, args...)
			if r.code == 0 || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want a failure with %q", r.code, r.stderr, tc.wantErr)
			}
		})
	}
	// The protected file stays readable; nothing of the attempts landed.
	args := append(p.runArgs(append([]string{"--rm"}, flags...)...), p.image, "cat", "/etc/app.conf")
	if r := p.run(t, args...); r.code != 0 || r.stdout != "cfg\n" {
		t.Errorf("read a protected file: exit %d, stdout %q, want cfg (%s)", r.code, r.stdout, r.stderr)
	}
	r := p.run(t, append(p.runArgs("--rm"), p.image, "sh", "-c", "cat /etc/secret /etc/app.conf /keys/k1; ls /data; ls /keys")...)
	if r.stdout != "topsecret\ncfg\nkey\nk1\n" {
		t.Errorf("without annotations the files are the image's: %q (%s)", r.stdout, r.stderr)
	}
}

// TestOCIAnnotationRefused gives create bad or unenforced annotations:
// each fails with the config's message, names its annotation, and no
// container is left.
func TestOCIAnnotationRefused(t *testing.T) {
	requirePodmanUser(t)
	p := newPodman(t)
	marker := filepath.Join(p.dir, "ran")
	tests := []struct {
		name, key, value string
		want             []string
	}{
		{"relative path", "run.cordon.deny", "etc/secret", []string{"annotation run.cordon.deny", "not an absolute container path"}},
		{"dot-dot", "run.cordon.protect", "/etc/../../x", []string{"annotation run.cordon.protect", ".. component"}},
		{"pattern", "run.cordon.deny", "/**/.env", []string{"annotation run.cordon.deny", "is a pattern"}},
		{"the whole container", "run.cordon.protect", "/", []string{"annotation run.cordon.protect", "whole container"}},
		{"misspelt key", "run.cordon.dney", "/etc/secret", []string{"annotation run.cordon.dney", "not an annotation cordon-oci knows"}},
		{"bad host", "run.cordon.network.allow", "bad host!", []string{"annotation run.cordon.network.allow", "is not host[:port]"}},
		{"audit log unwritable", "run.cordon.audit", p.auditDir + "/nonexistent-cordon-dir/audit.jsonl", []string{"annotation run.cordon.audit", "cannot be written"}},
		{"relative audit", "run.cordon.audit", "audit.jsonl", []string{"annotation run.cordon.audit", "not an absolute host path"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(p.runArgs(append([]string{"--rm", "-v", p.dir + ":/host"}, annotation(tc.key, tc.value)...)...),
				p.image, "touch", "/host/ran")
			r := p.run(t, args...)
			if r.code == 0 {
				t.Fatalf("the container ran: %s", r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the refused container's command ran")
			}
		})
	}
	if r := p.run(t, "ps", "--all", "--quiet"); strings.TrimSpace(r.stdout) != "" {
		t.Errorf("containers left: %s", r.stdout)
	}
}

// TestOCIPrivilegedRefused: a container with CAP_SYS_ADMIN could unmount
// what deny and protect mount, so they are refused for it.
func TestOCIPrivilegedRefused(t *testing.T) {
	requirePodmanUser(t)
	p := newPodman(t)
	args := append(p.runArgs(append([]string{"--rm", "--cap-add", "SYS_ADMIN"}, annotation("run.cordon.deny", "/etc/secret")...)...),
		p.image, "cat", "/etc/secret")
	r := p.run(t, args...)
	if r.code == 0 || strings.Contains(r.stdout, "topsecret") || !strings.Contains(r.stderr, "CAP_SYS_ADMIN") {
		t.Errorf("exit %d stdout %q stderr %q; want a refusal naming CAP_SYS_ADMIN", r.code, r.stdout, r.stderr)
	}
}
