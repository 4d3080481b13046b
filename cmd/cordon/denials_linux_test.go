package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxDefaultResult is the most bytes a default --json result (no
// --sandbox) may take for a run with one refused call: the sandbox's
// description (~7 KB of paths) is only there on request.
const maxDefaultResult = 1024

// jsonResult is what the denial tests read of a result.
type jsonResult struct {
	ExitCode    int    `json:"exit_code"`
	FailureType string `json:"failure_type"`
	Detail      string `json:"failure_detail"`
	Denials     []struct {
		Op, Path, Rule string
	} `json:"denials"`
	DenialCount int             `json:"denial_count"`
	Sandbox     json.RawMessage `json:"sandbox"`
}

// lastJSON parses the JSON object that ends s (cordon --json writes the
// result last on stderr).
func lastJSON(t *testing.T, s string) (jsonResult, int) {
	t.Helper()
	i := strings.LastIndex(s, "\n{\n")
	if i < 0 && strings.HasPrefix(s, "{\n") {
		i = -1
	} else if i < 0 {
		t.Fatalf("no JSON result in %q", s)
	}
	raw := s[i+1:]
	var r jsonResult
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("result %q: %v", raw, err)
	}
	return r, len(raw)
}

// TestIgnoredDenialListed: a command that tries to write a protected file
// (.git/config), ignores the refusal and exits 0 still has the refusal in
// its result, from cordon's own record (its stderr is thrown away, so
// nothing it printed can have told cordon), in --json and --report, for
// cordon run and for an exec in a session, root and rootless. The file is
// unchanged. The default result leaves the sandbox's description out and
// stays small; --sandbox puts it in.
func TestIgnoredDenialListed(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			config := filepath.Join(u.ws, ".git", "config")
			writeFile(t, config, "[core]\n")
			if u.prefix != nil {
				for _, p := range []string{filepath.Join(u.ws, ".git"), config} {
					if err := os.Chown(p, 4242, 4242); err != nil {
						t.Fatal(err)
					}
				}
			}
			script := "echo '[alias] x = !touch /tmp/pwned' >> .git/config 2>/dev/null; echo done"
			name := uniqueName("deny")
			startNamed(t, u, name)
			for _, tc := range []struct {
				name string
				args []string
			}{
				{"run", []string{"run", "--json", "--", "sh", "-c", script}},
				{"exec", []string{"exec", name, "--json", "--", "sh", "-c", script}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := u.run(t, "", tc.args...)
					if r.code != 0 || r.stdout != "done\n" {
						t.Fatalf("exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
					}
					res, size := lastJSON(t, r.stderr)
					if res.FailureType != "none" || len(res.Denials) != 1 || res.DenialCount != 1 {
						t.Fatalf("result lists %d denials of %d (failure %s), want the one refused write:\n%s", len(res.Denials), res.DenialCount, res.FailureType, r.stderr)
					}
					d := res.Denials[0]
					if d.Path != config || d.Op == "" || !strings.HasPrefix(d.Rule, "protect ") {
						t.Errorf("denial %+v, want the write of %s by a protect rule", d, config)
					}
					if res.Sandbox != nil {
						t.Errorf("the default result carries the sandbox's description (%d bytes in all)", size)
					}
					if size > maxDefaultResult {
						t.Errorf("the default result takes %d bytes, want at most %d:\n%s", size, maxDefaultResult, r.stderr)
					}
					if b, _ := os.ReadFile(config); string(b) != "[core]\n" {
						t.Fatalf("the protected file changed: %q", b)
					}
				})
			}
			t.Run("report and --sandbox", func(t *testing.T) {
				report := filepath.Join(u.ws, "r.json")
				r := u.run(t, "", "exec", name, "--report", report, "--sandbox", "--", "sh", "-c", script)
				if r.code != 0 {
					t.Fatalf("exit %d stderr %s", r.code, r.stderr)
				}
				m := readReportMap(t, report)
				if _, ok := m["sandbox"]; !ok {
					t.Errorf("--sandbox: the report has no sandbox: %v", m)
				}
				if ds, _ := m["denials"].([]any); len(ds) != 1 {
					t.Errorf("report denials %v, want one", m["denials"])
				}
				r = u.run(t, "", "run", "--report", report, "--", "sh", "-c", script)
				m = readReportMap(t, report)
				if ds, _ := m["denials"].([]any); r.code != 0 || len(ds) != 1 || m["sandbox"] != nil {
					t.Errorf("run --report: exit %d, denials %v, sandbox %v", r.code, m["denials"], m["sandbox"] != nil)
				}
			})
		})
	}
}
