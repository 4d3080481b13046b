//go:build unix

package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestLinkTargetsHeldByTable: the table behind the file tools and `cordon
// check` holds deny and protect on what symlinks reach, as the sandbox
// does (spec.PatternLinks): a write at a link's target (a protect
// pattern's match linked to realhooks, a link inside a protected
// directory, a dangling match's would-be target) and a read of a deny
// pattern's linked secret are refused at the target's own path with the
// typed error the sandbox's rule gives, naming what is writable; the host
// file is unchanged. New walks; NewPlanned takes the entries from the
// plan's sandbox, and View (a session's file tools) from the table it
// views, and they decide the same.
func TestLinkTargetsHeldByTable(t *testing.T) {
	const hook, secret = "#!/bin/sh\n", "SECRET\n"
	for _, tc := range []struct {
		name           string
		files, links   map[string]string
		deny, protect  []string // relative to the workspace
		write, read    string   // refused at the target (relative)
		unchanged      string   // host file (relative) that keeps its content, or ""
		wantErr        error
		rule, whereArg string
	}{
		{name: "pattern_match_link", files: map[string]string{"realhooks/pre-push": hook, "sub2/.git/HEAD": "x"},
			links: map[string]string{"sub2/.git/hooks": "../../realhooks"}, protect: []string{"**/.git/hooks"},
			write: "realhooks/pre-push", unchanged: "realhooks/pre-push", wantErr: ErrReadOnly, rule: RuleProtect},
		{name: "link_inside_protected_dir", files: map[string]string{"scripts/pre-commit": hook, ".git/HEAD": "x"},
			links: map[string]string{".git/hooks/pre-commit": "../../scripts/pre-commit"}, protect: []string{".git/hooks"},
			write: "scripts/pre-commit", unchanged: "scripts/pre-commit", wantErr: ErrReadOnly, rule: RuleProtect},
		{name: "dangling_link_would_be_target", files: map[string]string{"sub2/.git/HEAD": "x"},
			links: map[string]string{"sub2/.git/hooks": "../../realhooks"}, protect: []string{"**/.git/hooks"},
			write: "realhooks/pre-push", wantErr: ErrReadOnly, rule: RuleProtect},
		{name: "deny_pattern_match_link", files: map[string]string{"real/secret": secret},
			links: map[string]string{"keys/key.pem": "../real/secret"}, deny: []string{"**/*.pem"},
			write: "real/secret", read: "real/secret", unchanged: "real/secret", wantErr: ErrDenied, rule: RuleDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := filepath.Join(t.TempDir(), "ws")
			writeLinkTree(t, ws, tc.files, tc.links)
			sb := &spec.Sandbox{Root: ws}
			for _, d := range tc.deny {
				sb.Deny = append(sb.Deny, filepath.Join(ws, d))
			}
			for _, p := range tc.protect {
				sb.Protect = append(sb.Protect, filepath.Join(ws, p))
			}
			plan, err := spec.NewPlan(sb, spec.Process{Args: []string{"/bin/true"}, Cwd: ws}, spec.RunOptions{Rootfs: "/nonexistent"})
			if err != nil {
				t.Fatal(err)
			}
			built := map[string]func() (*Table, error){
				"New":        func() (*Table, error) { return New(sb) },
				"NewPlanned": func() (*Table, error) { return NewPlanned(sb, plan.Aliased) },
				"View": func() (*Table, error) {
					tab, err := New(sb)
					if err != nil {
						return nil, err
					}
					return tab.View(ws) // a session's view, here the workspace itself
				},
				// The front end's walk handed on: taken without walking.
				"NewLinked": func() (*Table, error) {
					links, err := spec.FindLinks(sb)
					if err != nil {
						return nil, err
					}
					n := spec.LinkWalks()
					tab, err := NewLinked(sb, links)
					if spec.LinkWalks() != n {
						t.Error("NewLinked walked with the links of its own sandbox given")
					}
					return tab, err
				},
				// Links of another sandbox (no rules: nothing found) are
				// not taken: the table walks and holds the targets.
				"NewLinked_other": func() (*Table, error) {
					links, err := spec.FindLinks(&spec.Sandbox{Root: ws})
					if err != nil {
						return nil, err
					}
					return NewLinked(sb, links)
				},
			}
			for how, mk := range built {
				tab, err := mk()
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				target := filepath.Join(ws, tc.write)
				for _, p := range []string{tc.write, target} {
					if tab.CanWrite(p) {
						t.Errorf("%s: CanWrite(%s) = true; want the link's target held", how, p)
					}
					wantRule(t, how+" CheckWrite", tab.CheckWrite(p), tc.wantErr, tc.rule)
					wantRule(t, how+" Write", tab.Write(p, "touch /tmp/pwned\n"), tc.wantErr, tc.rule)
					if _, err := tab.ResolveWrite(p); err == nil {
						t.Errorf("%s: ResolveWrite(%s) succeeded; want it refused", how, p)
					}
				}
				if tc.read != "" {
					if tab.CanRead(tc.read) {
						t.Errorf("%s: CanRead(%s) = true; want the denied link's target held", how, tc.read)
					}
					if _, err := tab.Resolve(tc.read); !errors.Is(err, ErrDenied) {
						t.Errorf("%s: Resolve(%s) = %v; want ErrDenied", how, tc.read, err)
					}
					if got, err := tab.Read(tc.read, 0); err == nil || strings.Contains(got, "SECRET") {
						t.Errorf("%s: Read(%s) = %q, %v; want it refused", how, tc.read, got, err)
					}
				}
				if tc.unchanged != "" {
					want := tc.files[tc.unchanged]
					if b, err := os.ReadFile(filepath.Join(ws, tc.unchanged)); err != nil || string(b) != want {
						t.Errorf("%s: host %s is now %q (%v); want %q", how, tc.unchanged, b, err, want)
					}
				} else if _, err := os.Lstat(target); err == nil {
					t.Errorf("%s: %s was made; want nothing at the would-be target", how, target)
				}
				if !tab.CanWrite(filepath.Join(ws, "elsewhere.txt")) {
					t.Errorf("%s: an unrelated file is refused too; want only the targets held", how)
				}
			}
		})
	}
}

// wantRule fails unless err is a *PathError wrapping want with rule, that
// says what is writable.
func wantRule(t *testing.T, what string, err, want error, rule string) {
	t.Helper()
	var pe *PathError
	if !errors.As(err, &pe) || !errors.Is(err, want) || pe.Rule != rule {
		t.Errorf("%s: %v; want a %v refusal by the %s rule", what, err, want, rule)
		return
	}
	if want == ErrReadOnly && len(pe.Allowed) == 0 {
		t.Errorf("%s: %v names nothing writable", what, err)
	}
}

func writeLinkTree(t *testing.T, root string, files, links map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for rel, target := range links {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}
