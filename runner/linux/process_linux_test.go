package linux

import (
	"reflect"
	"slices"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// TestNewProcess converts an OCI process field by field, and refuses what
// it cannot express.
func TestNewProcess(t *testing.T) {
	if _, err := NewProcess(nil); err == nil {
		t.Error("a spec without a process was accepted")
	}
	p := &specs.Process{
		Args:            []string{"make", "test"},
		Env:             []string{"PATH=/usr/bin", "LD_PRELOAD=/x.so"},
		Cwd:             "/w",
		User:            specs.User{UID: 1000, GID: 100, AdditionalGids: []uint32{5, 27}},
		NoNewPrivileges: true,
		ApparmorProfile: "cordon",
		SelinuxLabel:    "system_u:system_r:container_t:s0",
		ConsoleSize:     &specs.Box{Width: 120, Height: 40},
		Capabilities:    &specs.LinuxCapabilities{Bounding: []string{"CAP_KILL"}, Ambient: []string{}},
		Rlimits: []specs.POSIXRlimit{
			{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 512},
			{Type: "RLIMIT_FSIZE", Hard: 1 << 20, Soft: 1 << 20},
		},
	}
	lp, err := NewProcess(p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lp.Args, p.Args) || !slices.Equal(lp.Env, p.Env) || lp.Cwd != "/w" {
		t.Errorf("args %v env %v cwd %q", lp.Args, lp.Env, lp.Cwd)
	}
	if lp.UID != 1000 || lp.GID != 100 || !slices.Equal(lp.AdditionalGroups, []int{5, 27}) {
		t.Errorf("ids %d:%d %v", lp.UID, lp.GID, lp.AdditionalGroups)
	}
	if lp.NoNewPrivileges == nil || !*lp.NoNewPrivileges {
		t.Error("no_new_privs lost")
	}
	if lp.AppArmorProfile != "cordon" || lp.Label != p.SelinuxLabel {
		t.Errorf("apparmor %q label %q", lp.AppArmorProfile, lp.Label)
	}
	if lp.ConsoleWidth != 120 || lp.ConsoleHeight != 40 {
		t.Errorf("console %dx%d", lp.ConsoleWidth, lp.ConsoleHeight)
	}
	if lp.Capabilities == nil || !slices.Equal(lp.Capabilities.Bounding, []string{"CAP_KILL"}) || lp.Capabilities.Effective != nil {
		t.Errorf("capabilities %+v", lp.Capabilities)
	}
	want := []configs.Rlimit{{Type: unix.RLIMIT_NOFILE, Hard: 1024, Soft: 512}, {Type: unix.RLIMIT_FSIZE, Hard: 1 << 20, Soft: 1 << 20}}
	if !reflect.DeepEqual(lp.Rlimits, want) {
		t.Errorf("rlimits %+v, want %+v", lp.Rlimits, want)
	}

	p.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_BOGUS"}}
	if _, err := NewProcess(p); err == nil {
		t.Error("an unknown rlimit was accepted")
	}
}

// TestHandOverLoaderEnv: LD_* variables are renamed for cordon's init,
// which restores them for the command; nothing else changes.
func TestHandOverLoaderEnv(t *testing.T) {
	got := handOverLoaderEnv([]string{"PATH=/bin", "LD_PRELOAD=/x.so", "OLD_LD_X=1", "LD_LIBRARY_PATH=/l"})
	want := []string{"PATH=/bin", loaderEnvPrefix + "LD_PRELOAD=/x.so", "OLD_LD_X=1", loaderEnvPrefix + "LD_LIBRARY_PATH=/l"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
