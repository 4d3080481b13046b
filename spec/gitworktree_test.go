package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitDirMount: a workspace whose .git file sends git to a linked
// worktree's or a submodule's gitdir outside it gets the main .git,
// found as the kernel resolves the paths, when it names the workspace
// back (a worktree's gitdir file, a superproject's checkout holding it);
// none for a .git directory, a
// gitdir inside the workspace, a mount that shows it already, or
// git_worktree: false; a gitdir in no .git directory, or one that does not
// name the workspace back (a .git file a sandbox wrote), is refused with
// the fix.
func TestGitDirMount(t *testing.T) {
	base := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(base, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	put := func(p, s string) {
		if err := os.WriteFile(filepath.Join(base, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("main/.git/worktrees/wt")
	put("main/.git/worktrees/wt/commondir", "../..\n")
	put("main/.git/worktrees/wt/gitdir", base+"/wt/.git\n")
	mk("main/.git/modules/lib")
	mk("main/lib")
	put("main/lib/.git", "gitdir: ../.git/modules/lib\n")
	mk("wt")
	put("wt/.git", "gitdir: "+base+"/main/.git/worktrees/wt\n")
	mk("link")
	if err := os.Symlink(base+"/main/.git/worktrees", base+"/link/w"); err != nil {
		t.Fatal(err)
	}
	mk("viaLink")
	put("viaLink/.git", "gitdir: "+base+"/link/w/wt\n")
	mk("inside/g")
	put("inside/.git", "gitdir: g\n")
	mk("bare/repo.git")
	mk("sep")
	put("sep/.git", "gitdir: "+base+"/bare/repo.git\n")
	mk("main/.git/worktrees/wt2")
	put("main/.git/worktrees/wt2/commondir", "../..\n")
	put("main/.git/worktrees/wt2/gitdir", base+"/wt2/.git\n")
	mk("wt2")
	put("wt2/.git", "gitdir: "+base+"/link/w/wt2\n")
	mk("forged")
	put("forged/.git", "gitdir: "+base+"/main/.git/worktrees/wt\n")
	mk("other/.git/modules/x")
	mk("forgedSub")
	put("forgedSub/.git", "gitdir: "+base+"/other/.git/modules/x\n")
	mainGit := base + "/main/.git"
	for _, tc := range []struct {
		name, root string
		edit       func(*Sandbox)
		want       string // the mount's source, "" for none
		err        bool
	}{
		{"linked worktree", "wt", nil, mainGit, false},
		{"submodule checkout", "main/lib", nil, mainGit, false},
		{"through a symlink", "wt2", nil, mainGit, false},
		{"another's worktree through a symlink", "viaLink", nil, "", true},
		{"main checkout", "main", nil, "", false},
		{"gitdir inside", "inside", nil, "", false},
		{"mounted already", "wt", func(s *Sandbox) { s.Mounts = []Mount{{Source: base + "/main", Target: base + "/main"}} }, "", false},
		{"git_worktree: false", "wt", func(s *Sandbox) { s.NoGitWorktree = true }, "", false},
		{"in no .git directory", "sep", nil, "", true},
		{"a worktree's gitdir that names another", "forged", nil, "", true},
		{"a submodule gitdir of a repository elsewhere", "forgedSub", nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := &Sandbox{Root: filepath.Join(base, tc.root)}
			if tc.edit != nil {
				tc.edit(sb)
			}
			m, ok, err := GitDirMount(sb)
			var fe *FieldError
			if tc.err != (err != nil) || err != nil && (!errors.As(err, &fe) || !strings.Contains(fe.Fix, "git_worktree: false")) {
				t.Fatalf("err = %v", err)
			}
			if got := ""; ok {
				got = m.Source
				if m.Target != m.Source || m.Readonly {
					t.Errorf("mount %+v", m)
				}
				if got != tc.want {
					t.Errorf("mount of %s, want %q", got, tc.want)
				}
			} else if tc.want != "" {
				t.Errorf("no mount, want %s", tc.want)
			}
		})
	}
	sb := &Sandbox{Root: base + "/wt", Readonly: true}
	if m, ok, _ := GitDirMount(sb); !ok || !m.Readonly {
		t.Errorf("a read-only workspace: %+v %v", m, ok)
	}
}

func TestParseGitKeys(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Parse([]byte("sandbox: {git_identity: false, git_worktree: false}"), dir, "test.yaml")
	if err != nil || !cfg.Sandbox.NoGitIdentity || !cfg.Sandbox.NoGitWorktree {
		t.Fatalf("%+v %v", cfg, err)
	}
	cfg, err = Parse([]byte("sandbox: {}"), dir, "test.yaml")
	if err != nil || cfg.Sandbox.NoGitIdentity || cfg.Sandbox.NoGitWorktree {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
	if _, err := Parse([]byte("sandbox: {git_identity: maybe}"), dir, "test.yaml"); err == nil || !strings.Contains(err.Error(), "sandbox.git_identity") {
		t.Errorf("a bad value: %v", err)
	}
	p, err := Profile("strict", dir)
	if err != nil || !p.Sandbox.NoGitIdentity {
		t.Errorf("strict carries the identity: %v", err)
	}
}
