package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMountTargetOneAnswer checks that a mount target gets the same answer
// from the command line's --mount (ParseMount) and from the config's
// `target:`: accepted with the same clean path, or refused by both.
func TestMountTargetOneAnswer(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	// $HOME is the workspace here, which the config must allow.
	t.Setenv("HOME", dir)
	rows := []struct {
		target string
		want   string // "" = refused
	}{
		{"/srv/x", "/srv/x"},
		{"/srv/x/", "/srv/x"},
		{"/srv//x/.", "/srv/x"},
		{"~/mnt", filepath.Join(dir, "mnt")},
		{"/opt/../srv/x", ""},
		{"/srv/x/..", ""},
		{"relative/x", ""},
		{"/", ""},
		{"/proc", ""},
		{"/proc/self", ""},
		{"/dev/shm", ""},
		{"/sys/fs", ""},
		{"/devices", "/devices"},
		{"/system", "/system"},
		{"~other/x", ""},
	}
	for _, row := range rows {
		t.Run(row.target, func(t *testing.T) {
			m, flagErr := ParseMount(src+":"+row.target, dir)
			yaml := fmt.Sprintf("sandbox:\n  root: %s\n  allow_home_workspace: true\n  mounts:\n    - {source: %s, target: %q}\n", dir, src, row.target)
			cfg, yamlErr := Parse([]byte(yaml), dir, "test.yaml")
			if row.want == "" {
				if flagErr == nil || yamlErr == nil {
					t.Fatalf("--mount: %v; yaml: %v; want both refused", flagErr, yamlErr)
				}
				return
			}
			if flagErr != nil || yamlErr != nil {
				t.Fatalf("--mount: %v; yaml: %v; want both accepted", flagErr, yamlErr)
			}
			if m.Target != row.want || cfg.Sandbox.Mounts[0].Target != row.want {
				t.Errorf("--mount target %s, yaml target %s; want %s", m.Target, cfg.Sandbox.Mounts[0].Target, row.want)
			}
		})
	}
}

// TestParseMount checks the command line's mount form itself.
func TestParseMount(t *testing.T) {
	dir := t.TempDir()
	rows := []struct {
		in       string
		target   string
		readonly bool
		ok       bool
	}{
		{".", dir, false, true},
		{".:/w:ro", "/w", true, true},
		{".:rw", dir, false, true},
		{"missing:/w", "", false, false},
		{"", "", false, false},
		{".:/a:/b", "", false, false},
		{"a\x00b", "", false, false},
	}
	for _, row := range rows {
		m, err := ParseMount(row.in, dir)
		if (err == nil) != row.ok {
			t.Errorf("ParseMount(%q) = %+v, %v; want ok=%v", row.in, m, err, row.ok)
			continue
		}
		if row.ok && (m.Source != dir || m.Target != row.target || m.Readonly != row.readonly) {
			t.Errorf("ParseMount(%q) = %+v; want source %s target %s readonly %v", row.in, m, dir, row.target, row.readonly)
		}
	}
}
