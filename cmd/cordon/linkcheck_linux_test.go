package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckAgreesWithRunOnLinkTargets: `cordon check` and a real `cordon
// run` on the same config give one answer at what a rule reaches through
// a symlink: the target of a protect pattern's match that is a link
// (sub2/.git/hooks -> ../../realhooks), of a link inside a protected
// directory (.git/hooks/pre-commit -> ../../scripts/pre-commit), the
// would-be target of a dangling match (sub3/.git/hooks -> ../../ghost),
// and of a deny pattern's link (keys/key.pem -> ../real/secret): check
// refuses each (exit 1, naming the rule) and so does the sandbox, with
// the host files unchanged and nothing made; an ordinary file is allowed
// by both. Root, and rootless (uid 4242 through setpriv) in the same run.
func TestCheckAgreesWithRunOnLinkTargets(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) { checkLinkTargets(t, u) })
	}
}

func checkLinkTargets(t *testing.T, u sessionUser) {
	const hook, secret = "#!/bin/sh\n", "SECRET-link-target\n"
	ws := filepath.Join(u.ws, "linkcheck")
	files := map[string]string{"realhooks/pre-push": hook, "scripts/pre-commit": hook, "real/secret": secret,
		".git/HEAD": "ref: refs/heads/main\n", "sub2/.git/HEAD": "x\n", "sub3/.git/HEAD": "x\n",
		"cordon.yaml": "sandbox:\n  root: .\n  protect_defaults: false\n  protect: [\".git/hooks\", \"**/.git/hooks\"]\n  deny: [\"**/*.pem\"]\n"}
	for rel, data := range files {
		writeFile(t, filepath.Join(ws, rel), data)
	}
	for rel, target := range map[string]string{"sub2/.git/hooks": "../../realhooks", ".git/hooks/pre-commit": "../../scripts/pre-commit",
		"sub3/.git/hooks": "../../ghost", "keys/key.pem": "../real/secret"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(ws, rel)); err != nil {
			t.Fatal(err)
		}
	}
	if u.prefix != nil {
		if err := filepath.Walk(ws, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, 4242, 4242)
		}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(ws, "cordon.yaml")
	for _, tc := range []struct {
		op, rel, rule string // rule: "" when allowed
	}{
		{"write", "realhooks/pre-push", "protect"},
		{"write", "scripts/pre-commit", "protect"},
		{"write", "ghost/pre-push", "protect"},
		{"write", "real/secret", "deny"},
		{"read", "real/secret", "deny"},
		{"write", "ok.txt", ""},
	} {
		p := filepath.Join(ws, tc.rel)
		script := "cat " + tc.rel
		if tc.op == "write" {
			script = "mkdir -p " + filepath.Dir(tc.rel) + "; echo 'touch /tmp/pwned' >> " + tc.rel
		}
		c := u.run(t, "", "check", "--config", cfg, tc.op, p)
		r := u.run(t, "", "run", "--config", cfg, "--", "sh", "-c", "cd "+ws+" && "+script)
		if tc.rule == "" {
			if c.code != exitOK || r.code != 0 {
				t.Errorf("%s %s: check exit %d %q, run exit %d %q; want both to allow it", tc.op, tc.rel, c.code, c.stdout, r.code, r.stderr)
			}
			continue
		}
		if c.code != exitDenied || !strings.Contains(c.stdout+c.stderr, tc.rule) {
			t.Errorf("check %s %s: exit %d %q %q; want it refused by the %s rule, as the sandbox refuses it", tc.op, tc.rel, c.code, c.stdout, c.stderr, tc.rule)
		}
		if r.code == 0 || strings.Contains(r.stdout, "SECRET") {
			t.Errorf("run %q: exit %d %q; want it refused, as check refuses it", script, r.code, r.stdout)
		}
	}
	for rel, data := range files {
		if b, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || string(b) != data {
			t.Errorf("host %s is now %q (%v); want %q", rel, b, err, data)
		}
	}
	if fileExists(filepath.Join(ws, "ghost/pre-push")) {
		t.Error("a hook was made at the dangling link's would-be target")
	}
}
