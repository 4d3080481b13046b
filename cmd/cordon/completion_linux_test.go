package main

import (
	"os"
	"os/exec"
	"path/filepath"
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
