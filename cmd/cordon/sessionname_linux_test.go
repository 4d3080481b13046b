package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSessionPositionalName: `cordon session start NAME` is `--name NAME`,
// wherever the name stands among the flags; a second name, a name given
// both ways, or a command is refused with errSessionArgs (which names
// --name and cordon exec); flags it cannot parse are left as they are.
func TestSessionPositionalName(t *testing.T) {
	for _, tc := range []struct {
		args, want []string
		refused    bool
	}{
		{args: []string{"work"}, want: []string{"--name", "work"}},
		{args: []string{"work", "--profile", "strict", "-e", "A=1"}, want: []string{"--name", "work", "--profile", "strict", "-e", "A=1"}},
		{args: []string{"--profile", "strict", "work", "--network"}, want: []string{"--name", "work", "--profile", "strict", "--network"}},
		{args: []string{"--name", "work", "--profile", "strict"}, want: []string{"--name", "work", "--profile", "strict"}},
		{args: []string{"--profile", "work"}, want: []string{"--profile", "work"}},
		{args: nil, want: nil},
		{args: []string{"--bogus", "work"}, want: []string{"--bogus", "work"}},
		{args: []string{"work", "--bogus"}, want: []string{"--name", "work", "--bogus"}},
		{args: []string{"a", "b"}, refused: true},
		{args: []string{"--name", "a", "b"}, refused: true},
		{args: []string{"b", "--name=a"}, refused: true},
		{args: []string{"--", "make", "test"}, refused: true},
		{args: []string{"work", "--", "make"}, refused: true},
	} {
		got, err := sessionPositionalName(tc.args)
		if tc.refused {
			if !errors.Is(err, errSessionArgs) || !strings.Contains(err.Error(), "--name NAME") || !strings.Contains(err.Error(), "cordon exec NAME") {
				t.Errorf("%q: got %q, %v; want errSessionArgs", tc.args, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
}

// TestSessionCLIPositionalName: `cordon session start NAME [flags]` starts
// the session NAME with those flags (it once failed with "supervisor exited
// before the sandbox was ready"); two names, a name given both ways, a
// command, and a bad name are refused at once with exit 2 and the usage
// (--name), and no session, socket or state directory is left. Root, and
// rootless (uid 4242 through setpriv).
func TestSessionCLIPositionalName(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("pos")
			r := u.run(t, "", "session", "start", name, "-e", "CORDON_POS_TEST=yes")
			if r.code != 0 || strings.TrimSpace(r.stdout) != name {
				t.Fatalf("session start NAME: exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
			}
			t.Cleanup(func() { u.run(t, "", "session", "stop", name) })
			if r := u.run(t, "", "exec", name, "--", "sh", "-c", "echo $CORDON_POS_TEST"); r.code != 0 || r.stdout != "yes\n" {
				t.Fatalf("exec in the session started by a positional name: exit %d %q %s", r.code, r.stdout, r.stderr)
			}

			a, b := uniqueName("posa"), uniqueName("posb")
			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{a, b}, "--name NAME"},
				{[]string{"--name", a, b}, "--name NAME"},
				{[]string{a, "--", "make", "test"}, "cordon exec NAME"},
				{[]string{"--name", a + "/x"}, "cordon session start:"},
				{[]string{a + "/x"}, "cordon session start:"},
			} {
				r := u.run(t, "", append([]string{"session", "start"}, tc.args...)...)
				if r.code != exitConfig || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "supervisor exited") || r.stdout != "" {
					t.Errorf("session start %q: exit %d stdout %q stderr %q; want exit %d naming %q", tc.args, r.code, r.stdout, r.stderr, exitConfig, tc.want)
				}
			}
			if r := u.run(t, "", "session", "list"); strings.Contains(r.stdout, a) || strings.Contains(r.stdout, b) {
				t.Errorf("a refused start left a session:\n%s", r.stdout)
			}
			for _, n := range []string{a, b} {
				if m, _ := filepath.Glob(filepath.Join(u.state, "*", n+"*")); len(m) > 0 {
					t.Errorf("a refused start left %v", m)
				}
			}
			if _, err := os.Stat(filepath.Join(u.state, "sessions", a)); err == nil {
				t.Errorf("a refused start left the session directory of %s", a)
			}
		})
	}
}
