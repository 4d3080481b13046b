package spec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tails returns, once each, what is left of the pattern components pc
// once they have matched all of xc, joined with "/": "" when xc matches
// the whole pattern.
func tails(pc, xc []string) []string {
	var out []string
	for _, i := range tailStates(pc, statesAt(pc, xc, false)) {
		out = append(out, strings.Join(pc[i:], "/"))
	}
	return out
}

func TestPatternTails(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          []string
	}{
		{"/w/**/.git/hooks", "/w/a/.git/hooks", []string{""}},
		{"/w/**/.git/hooks", "/w/a/.git", []string{"**/.git/hooks", "hooks"}},
		{"/w/**/.git/hooks", "/w/a", []string{"**/.git/hooks"}},
		{"/w/**/*.pem", "/w/k.pem", []string{""}},
		{"/w/**/*.pem", "/w/keys", []string{"**/*.pem"}},
		{"/w/*/secret", "/w/a/b", nil},
		{"/w/*/secret", "/w/a", []string{"secret"}},
		{"/w/a/**", "/w/a", []string{""}},
	} {
		got := tails(comps(tc.pattern), comps(tc.path))
		if !slices.Equal(got, tc.want) {
			t.Errorf("tails(%s, %s) = %q, want %q", tc.pattern, tc.path, got, tc.want)
		}
	}
}

// TestWithPatternLinks: each row builds a tree ("dir a", "file a",
// "link a target") in a workspace and checks the entries a pattern's
// symlinks add, as the kernel would resolve them in the sandbox.
func TestWithPatternLinks(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tree        []string
		deny, prot  []string // patterns, relative to the workspace
		readonly    bool
		system      bool     // "sys/" below the workspace's parent is a host system directory
		wantDeny    []string // added entries, relative to the workspace
		wantProtect []string
		wantErr     bool
	}{
		{name: "hooks linked into the tree", tree: []string{"dir sub/.git", "dir real", "link sub/.git/hooks ../../real"},
			prot: []string{"**/.git/hooks"}, wantProtect: []string{"real"}},
		{name: "dangling: the would-be target", tree: []string{"dir sub/.git", "link sub/.git/hooks ../../gone/deeper"},
			prot: []string{"**/.git/hooks"}, wantProtect: []string{"gone/deeper"}},
		{name: "dangling, .. after a missing name: the first missing name", tree: []string{"dir sub/.git", "link sub/.git/hooks ../../gone/../x"},
			prot: []string{"**/.git/hooks"}, wantProtect: []string{"gone"}},
		{name: "dangling on the way: the rest of the pattern below the would-be target", tree: []string{"link sub/.git ../gonegit"},
			prot: []string{"**/.git/hooks"}, deny: []string{"**/*.pem"}, wantProtect: []string{"gonegit/hooks"}},
		{name: "a directory link within the pattern's reach adds nothing (pnpm)", tree: []string{"dir .pnpm/a@1/node_modules/a",
			"link node_modules/a ../.pnpm/a@1/node_modules/a", "link node_modules/b ../gone"},
			prot: []string{"**/.git/hooks"}, deny: []string{"**/*.pem"}},
		{name: "no lexical cleaning: .. after a link", tree: []string{"dir sub/.git", "dir x/y", "dir x/real", "link sub/l ../x/y", "link sub/.git/hooks ../l/../real"},
			prot: []string{"**/.git/hooks"}, wantProtect: []string{"x/real"}}, // sub/l leads where the pattern reaches itself
		{name: ".git linked: the rest of the pattern", tree: []string{"dir realgit/hooks", "link sub/.git ../realgit"},
			prot: []string{"**/.git/hooks"}, wantProtect: []string{"realgit/hooks"}},
		{name: "deny link to a file", tree: []string{"file real/secret", "link k.pem real/secret"},
			deny: []string{"**/*.pem"}, wantDeny: []string{"real/secret"}},
		{name: "read-only workspace: protect needs nothing", tree: []string{"dir sub/.git", "dir real", "link sub/.git/hooks ../../real"},
			prot: []string{"**/.git/hooks"}, readonly: true},
		{name: "outside the sandbox: nothing", tree: []string{"dir sub/.git", "link sub/.git/hooks /nonexistent-cordon/hooks"},
			prot: []string{"**/.git/hooks"}, deny: []string{"**/hooks"}},
		{name: "a loop is refused", tree: []string{"dir sub/.git", "link sub/.git/hooks loop", "link sub/.git/loop hooks"},
			prot: []string{"**/.git/hooks"}, wantErr: true},
		{name: "a link inside a protected directory", tree: []string{"file scripts/pc", "file .git/hooks/own", "dir sub/.git/hooks",
			"link .git/hooks/pre-commit ../../scripts/pc", "link .git/hooks/self own", "link sub/.git/hooks/pre-push ../../../scripts/pp"},
			prot: []string{".git/hooks", "**/.git/hooks"}, wantProtect: []string{"scripts/pc", "scripts/pp"}},
		{name: "deny: a link inside a masked directory is not reached", tree: []string{"file real/k", "link secrets/k ../real/k"},
			deny: []string{"secret*"}},
		{name: "below a file: nothing", tree: []string{"file wt/.git"}, prot: []string{"wt/.git/hooks", "**/.git/hooks"}},
		{name: "deny link to a system file: masked", tree: []string{"link k.pem ../sys/ca"},
			deny: []string{"**/*.pem"}, system: true, wantDeny: []string{"../sys/ca"}},
		{name: "protect link into a system directory: nothing", tree: []string{"dir sub/.git", "link sub/.git/hooks ../../../sys"},
			prot: []string{"**/.git/hooks"}, system: true},
		{name: "literal protect only: a link inside is held", tree: []string{"file scripts/pc", "link .git/hooks/pre-commit ../../scripts/pc"},
			prot: []string{".git/hooks"}, wantProtect: []string{"scripts/pc"}},
		{name: "no link: nothing", tree: []string{"dir sub/.git/hooks", "file k.pem"},
			prot: []string{"**/.git/hooks"}, deny: []string{"**/*.pem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := filepath.Join(t.TempDir(), "ws")
			var system []string
			if tc.system {
				system = []string{filepath.Join(filepath.Dir(ws), "sys")}
				if err := os.MkdirAll(system[0], 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(system[0], "ca"), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, line := range tc.tree {
				f := strings.Fields(line)
				p := filepath.Join(ws, f[1])
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				var err error
				switch f[0] {
				case "dir":
					err = os.MkdirAll(p, 0o755)
				case "file":
					err = os.WriteFile(p, []byte("x"), 0o644)
				case "link":
					err = os.Symlink(f[2], p)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			abs := func(rel []string) []string {
				var out []string
				for _, r := range rel {
					out = append(out, filepath.Join(ws, r))
				}
				return out
			}
			sb := &Sandbox{Root: ws, Readonly: tc.readonly, Deny: abs(tc.deny), Protect: abs(tc.prot)}
			got, err := withPatternLinks(sb, system, nil)
			if tc.wantErr {
				if !errors.Is(err, ErrUnenforceable) {
					t.Fatalf("err = %v, want ErrUnenforceable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := got.Deny[len(sb.Deny):]; !slices.Equal(d, abs(tc.wantDeny)) {
				t.Errorf("deny added %q, want %q", d, abs(tc.wantDeny))
			}
			if p := got.Protect[len(sb.Protect):]; !slices.Equal(p, abs(tc.wantProtect)) {
				t.Errorf("protect added %q, want %q", p, abs(tc.wantProtect))
			}
			checkPlanWithLinks(t, sb, system)
		})
	}
}

func TestPatternLinksExported(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "sub/.git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../realhooks", filepath.Join(ws, "sub/.git/hooks")); err != nil {
		t.Fatal(err)
	}
	sb := &Sandbox{Root: ws, Protect: []string{ws + "/**/.git/hooks"}, Deny: []string{ws + "/**/*.pem"}}
	deny, protect, err := PatternLinks(sb)
	if err != nil || len(deny) != 0 || !slices.Equal(protect, []string{ws + "/realhooks"}) {
		t.Fatalf("PatternLinks = %q, %q, %v; want no deny and protect %s/realhooks", deny, protect, err, ws)
	}
	if len(sb.Protect) != 1 {
		t.Fatalf("sb changed: %q", sb.Protect)
	}
}
