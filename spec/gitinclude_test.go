package spec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestGitIncludes(t *testing.T) {
	ws := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".git/config", "[core]\n\tbare = false\n[include]\n\tpath = ../team.gitconfig\n[includeIf \"onbranch:main\"]\n\tpath = \"local.inc\" # a comment\n[include] path = /etc/gitconfig.d/x\n")
	write("team.gitconfig", "[include]\n\tpath = deeper/more.inc\n")
	write("deeper/more.inc", "[include]\n\tpath = ../team.gitconfig\n") // a loop
	write(".git/modules/lib/config", "[includeIf \"gitdir:/x/\"]\n\tpath = ../../../sub.inc\n")
	sb := &Sandbox{Root: ws, Protect: []string{filepath.Join(ws, ".git/config"), filepath.Join(ws, ".git/hooks")}}
	got := gitIncludes(sb)
	want := []string{filepath.Join(ws, "team.gitconfig"), filepath.Join(ws, ".git/local.inc"), filepath.Join(ws, "deeper/more.inc"), filepath.Join(ws, "sub.inc")}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("gitIncludes = %v, want %v", got, want)
	}
	// A read-only workspace: nothing the sandbox can write.
	sb.Readonly = true
	if got := gitIncludes(sb); len(got) != 0 {
		t.Fatalf("read-only workspace: %v", got)
	}
	sb.Readonly = false
	al := WithAliases(sb)
	if !slices.Contains(al.Protect, filepath.Join(ws, "team.gitconfig")) {
		t.Fatalf("WithAliases does not protect the include: %v", al.Protect)
	}
}
