package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecReportNotForgedByTheCommand: the report of cordon exec cannot be
// denied inside a session that was built before its path was known, so the
// command can replace the file while it runs. Whatever it leaves at the
// path (a forged report in a new file, junk appended to the real one, a
// symbolic link to a file of the caller, a FIFO, a hard link to a workspace
// file), the report found at the path afterwards is cordon's, with the
// command's exit status, and nothing else on the host changed; a non-empty
// folder there makes the exec fail (125) rather than leave the command's
// content to be read (review of issue 9). Root and rootless, through the
// C client and the Go client (execclient_linux.c, execclient_linux.go).
func TestExecReportNotForgedByTheCommand(t *testing.T) {
	for _, u := range sessionUsers(t) {
		for _, client := range []struct {
			name string
			env  []string
		}{{"c", nil}, {"go", goClientEnv()}} {
			t.Run(u.name+"/"+client.name, func(t *testing.T) {
				// A workspace of each client's own: a run leaves a folder at rep.json.
				cu := u
				cu.ws = filepath.Join(u.ws, client.name)
				if err := os.Mkdir(cu.ws, 0o755); err != nil {
					t.Fatal(err)
				}
				if u.prefix != nil {
					if err := os.Chown(cu.ws, 4242, 4242); err != nil {
						t.Fatal(err)
					}
				}
				checkExecReportNotForged(t, cu, client.env)
			})
		}
	}
}

func checkExecReportNotForged(t *testing.T, u sessionUser, env []string) {
	name := uniqueName("rep")
	startNamed(t, u, name)
	victim := filepath.Join(filepath.Dir(u.ws), "victim-"+name)
	writeFile(t, victim, "keep")
	t.Cleanup(func() { _ = os.Remove(victim) })
	if u.prefix != nil {
		if err := os.Chown(victim, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	rep := filepath.Join(u.ws, "rep.json")
	for _, tc := range []struct{ name, script string }{
		{"forged", `rm -f rep.json; printf '{"exit_code": 0, "failure_type": "none", "forged": true}' > rep.json`},
		{"appended", `printf '%5000s{"forged": true}' x >> rep.json`},
		{"link", "rm -f rep.json; ln -s " + victim + " rep.json"},
		{"fifo", "rm -f rep.json; mkfifo rep.json"},
		{"hardlink", "echo source > src; rm -f rep.json; ln src rep.json"},
	} {
		r := runExecCmd(t, u.execCmd("", env, "exec", name, "--report", "rep.json", "--", "sh", "-c", tc.script+"; exit 3"))
		if r.code != 3 {
			t.Errorf("%s: exit %d, stderr %s", tc.name, r.code, r.stderr)
		}
		got := readReportMap(t, rep)
		if got["exit_code"] != float64(3) || got["forged"] != nil {
			t.Errorf("%s: the report is %v; want cordon's, exit_code 3", tc.name, got)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the victim is now %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(u.ws, "src")); string(b) != "source\n" {
		t.Errorf("the hard-linked workspace file is now %q", b)
	}
	// Rootless, the command owns the folder, so it can leave a
	// forged report in it and make both read-only.
	ro := filepath.Join(u.ws, "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(ro, 0o755) })
	if u.prefix != nil {
		if err := os.Chown(ro, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	r := runExecCmd(t, u.execCmd("", env, "exec", name, "--report", "ro/rep.json", "--", "sh", "-c",
		`rm -f ro/rep.json; printf '{"exit_code": 0, "forged": true}' > ro/rep.json; chmod 444 ro/rep.json; chmod 555 ro; exit 3`))
	if got := readReportMap(t, filepath.Join(ro, "rep.json")); r.code != 3 || got["exit_code"] != float64(3) || got["forged"] != nil {
		t.Errorf("read-only folder: exit %d, report %v, stderr %s", r.code, got, r.stderr)
	}
	r = runExecCmd(t, u.execCmd("", env, "exec", name, "--report", "rep.json", "--", "sh", "-c", "rm -f rep.json; mkdir rep.json; echo forged > rep.json/x; exit 3"))
	if r.code != exitSetup || !strings.Contains(r.stderr, "was replaced or moved while the command ran") {
		t.Errorf("a folder at the report path: exit %d, stderr %s; want 125 and the reason", r.code, r.stderr)
	}
}
