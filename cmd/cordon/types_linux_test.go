package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealFailureTypes runs the wordings the classifier must type right
// with the real programs, for cordon run and an exec in a session, root
// and rootless: Python reading a deny path is told "cannot read" (never
// "cannot write"), and Python writing past limits.file_size (it ignores
// SIGXFSZ, so it sees EFBIG) gets the file-size hint. The deny path's
// content never reaches stdout, and the file never grows past the limit.
func TestRealFailureTypes(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			cfg := filepath.Join(u.ws, "c.yaml")
			writeFile(t, cfg, "sandbox:\n  deny: [.env]\n  limits: {file_size: 64KiB}\n")
			writeFile(t, filepath.Join(u.ws, ".env"), "TOKEN=s3cret\n")
			if u.prefix != nil {
				for _, p := range []string{cfg, filepath.Join(u.ws, ".env")} {
					if err := os.Chown(p, 4242, 4242); err != nil {
						t.Fatal(err)
					}
				}
			}
			name := uniqueName("types")
			startNamed(t, u, name, "--config", cfg)
			big := filepath.Join(u.ws, "big")
			rows := []struct {
				name, code, ft, want string
			}{
				{"python reads a deny path", "print(open('.env').read())", "sandbox_denied",
					"cannot read " + filepath.Join(u.ws, ".env") + ": denied by the sandbox's deny list"},
				{"python writes past file_size", "open('big','wb').write(b'x'*(1<<20))", "process_error",
					`its stderr says "File too large" (EFBIG): if a file reached limits.file_size (64KiB), that was it`},
			}
			for _, row := range rows {
				for _, via := range [][]string{{"run", "--json", "--config", cfg}, {"exec", name, "--json"}} {
					t.Run(row.name+" "+via[0], func(t *testing.T) {
						_ = os.Remove(big)
						r := u.run(t, "", append(via, "--", "/usr/bin/python3", "-c", row.code)...)
						res, _ := lastJSON(t, r.stderr)
						if r.code == 0 || res.FailureType != row.ft || !strings.Contains(res.Detail, row.want) {
							t.Fatalf("exit %d %s, detail lacks %q:\n%s", r.code, res.FailureType, row.want, r.stderr)
						}
						if strings.Contains(r.stderr, "cannot write "+filepath.Join(u.ws, ".env")) || strings.Contains(r.stdout, "s3cret") {
							t.Errorf("stdout %q stderr %s", r.stdout, r.stderr)
						}
						if fi, err := os.Stat(big); err == nil && fi.Size() > 64<<10 {
							t.Errorf("%s grew to %d bytes past the 64KiB limit", big, fi.Size())
						}
					})
				}
			}
		})
	}
}
