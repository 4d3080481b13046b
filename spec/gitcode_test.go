package spec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGitCodePaths is finding 5 of issue 21 at the sandbox's build: a
// protected config's core.hooksPath and the programs its keys name, and
// the host's global config's, are protected where the sandbox can write
// them, resolved as the host's kernel does (a link on the way protected
// too; a missing place at its first missing name).
func TestGitCodePaths(t *testing.T) {
	ws := t.TempDir()
	other := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{".husky/_", "sub/inner", "bin"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(ws, "sub/inner"), filepath.Join(ws, "lnk")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(ws, ".git/config"), "[core]\n\thooksPath = .husky/_\n\tfsmonitor = ./tools/fsm.sh\n"+
		"\tpager = \"'bin/my pager' -R\" ; a comment\n[alias]\n\tx = \"!scripts/x.sh --flag\"\n\ty = log\n"+
		"[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n[credential]\n\thelper = mine\n"+
		"[include]\n\tpath = inc.cfg\n[diff \"d\"]\n\ttextconv = lnk/../conv\n[gpg]\n\tprogram = missing/../gpg\n"+
		"[diff]\n\texternal = tools2/d.sh\n[trailer \"sign\"]\n\tcommand = tools3/t.sh\n[submodule \"x\"]\n\tupdate = !tools4/p.sh\n"+
		"[submodule \"y\"]\n\tupdate = rebase\n[core]\n\tgitProxy = tools5/px\n[remote \"o\"]\n\tuploadpack = tools6/up\n"+
		"[sendemail]\n\tsmtpServer = smtp.example.com\n")
	write(filepath.Join(ws, ".git/inc.cfg"), "[core]\n\teditor = ed/edit --wait\n\tsshCommand = $HOME/x\n")
	write(filepath.Join(ws, "bin/git-credential-mine"), "")
	global := filepath.Join(other, "gitconfig")
	write(global, "[core]\n\thooksPath = .githooks\n[sequence]\n\teditor = "+filepath.Join(ws, "seq.sh")+"\n")
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("PATH", filepath.Join(ws, "bin")+":/usr/bin:/bin")
	sb := &Sandbox{Root: ws, Protect: []string{filepath.Join(ws, ".git/config"), filepath.Join(ws, ".git/hooks")}}
	got := gitCodePaths(sb)
	want := []string{
		filepath.Join(ws, ".husky/_"),
		filepath.Join(ws, "tools"), // missing: protected at its first missing name
		filepath.Join(ws, "bin/my pager"),
		filepath.Join(ws, "scripts"),
		filepath.Join(ws, "bin/git-credential-mine"),
		filepath.Join(ws, "bin/git-lfs"), // a writable PATH directory before the one that holds it
		filepath.Join(ws, "ed"),
		filepath.Join(ws, "lnk"), filepath.Join(ws, "sub/conv"), // lnk/.. is sub, not the workspace
		filepath.Join(ws, "missing"),
		filepath.Join(ws, ".githooks"), // the global config's, for the workspace's repository
		filepath.Join(ws, "seq.sh"),
		filepath.Join(ws, "tools2"), filepath.Join(ws, "tools3"), filepath.Join(ws, "tools4"),
		filepath.Join(ws, "tools5"), filepath.Join(ws, "tools6"),
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("gitCodePaths =\n%v\nwant\n%v", got, want)
	}
	al := WithAliases(sb)
	if !slices.Contains(al.Protect, filepath.Join(ws, ".husky/_")) {
		t.Fatalf("WithAliases does not protect the hooks path: %v", al.Protect)
	}
	sb.Readonly = true
	if got := gitCodePaths(sb); len(got) != 0 {
		t.Fatalf("read-only workspace: %v", got)
	}
}

func TestHostWalk(t *testing.T) {
	d := t.TempDir()
	for _, e := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(d, e), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(d, "a/b"), filepath.Join(d, "l")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, end string }{
		{d + "/l/..", d + "/a"},
		{d + "/l/../../c", d + "/c"},
		{d + "/c/../a", d + "/a"},
		{d + "/new/../c", d + "/new"},
		{d + "/f/x", d + "/f"},
	} {
		if end, _, ok := hostWalk(tc.in); !ok || end != tc.end {
			t.Errorf("hostWalk(%s) = %s %v, want %s", tc.in, end, ok, tc.end)
		}
	}
}
