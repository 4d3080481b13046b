package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletionSessionNames: bash completes the name of a running session
// from its prefix where one is wanted (session stop/ps/kill, exec).
func TestCompletionSessionNames(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	u := sessionUsers(t)[0]
	name := uniqueName("compl")
	startNamed(t, u, name)
	prefix := name[:len(name)-3]
	script := `source <(cordon completion bash)
COMP_WORDS=(cordon session stop ` + prefix + `); COMP_CWORD=3; _cordon; echo "1:${COMPREPLY[*]}"
COMP_WORDS=(cordon session ps ` + prefix + `); COMP_CWORD=3; _cordon; echo "2:${COMPREPLY[*]}"
COMP_WORDS=(cordon exec ` + prefix + `); COMP_CWORD=2; _cordon; echo "3:${COMPREPLY[*]}"`
	cmd := exec.Command(bash, "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(u.bin)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if want := "1:" + name + "\n2:" + name + "\n3:" + name + "\n"; err != nil || string(out) != want {
		t.Fatalf("completion: %v %q; want %q", err, out, want)
	}
}

// TestDoctorSaysNested: cordon doctor run inside a cordon sandbox (a run's
// and a session's) says so first, root and rootless; on the host it does
// not.
func TestDoctorSaysNested(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			bin := filepath.Join(u.ws, "cordon-copy")
			data, err := os.ReadFile(u.bin)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, bin, string(data))
			if err := os.Chmod(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if u.prefix != nil {
				if err := os.Chown(bin, 4242, 4242); err != nil {
					t.Fatal(err)
				}
			}
			name := uniqueName("nested")
			startNamed(t, u, name)
			for _, args := range [][]string{{"run", "--"}, {"exec", name, "--"}} {
				r := u.run(t, "", append(args, bin, "doctor")...)
				if !strings.HasPrefix(r.stdout, "ok   nested ") || !strings.Contains(r.stdout, "inside a cordon sandbox") {
					t.Errorf("%s: doctor inside does not say it is nested:\n%s%s", args[0], r.stdout, r.stderr)
				}
			}
			if r := u.run(t, "", "doctor"); strings.Contains(r.stdout, "nested") {
				t.Errorf("doctor on the host says nested:\n%s", r.stdout)
			}
		})
	}
}
