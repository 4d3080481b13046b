package decide

import (
	"errors"
	"path"
	"strings"
	"testing"
)

// memFS is a file tree in memory: each path is "dir", "file" or
// "link TARGET". Its resolve walks a path as the kernel does (symlinks
// followed, ".." applied after them, ".." after a missing name or a file
// refused), with no system call.
type memFS map[string]string

func (m memFS) resolve(p string) (Resolved, error) {
	pending := strings.Split(p, "/")
	cur, missing, links := "/", 0, 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if missing > 0 || m[cur] == "file" {
				return Resolved{}, errors.New("not a directory")
			}
			cur = path.Dir(cur)
			continue
		}
		if m[cur] == "file" {
			return Resolved{}, errors.New("not a directory")
		}
		next := path.Join(cur, c)
		kind := m[next]
		switch {
		case missing > 0 || kind == "":
			missing++
		case strings.HasPrefix(kind, "link "):
			if links++; links > 40 {
				return Resolved{}, errors.New("too many links")
			}
			target := strings.TrimPrefix(kind, "link ")
			pending = append(strings.Split(target, "/"), pending...)
			if strings.HasPrefix(target, "/") {
				cur = "/"
			}
			continue
		}
		cur = next
	}
	return Resolved{Path: cur, Missing: missing}, nil
}

// repoFS is a checkout at /w with a submodule's gitdir, a linked
// worktree's, an unguarded directory and links the sandbox made.
var repoFS = memFS{
	"/w": "dir", "/w/.git": "dir", "/w/.git/hooks": "dir", "/w/.git/modules": "dir", "/w/.git/modules/lib": "dir",
	"/w/.git/worktrees": "dir", "/w/.git/worktrees/wt": "dir",
	"/w/evil": "dir", "/w/evil/inner": "dir", "/w/sub": "dir", "/w/lib": "dir", "/w/lib/sub": "dir",
	"/w/.git/modules/lib/modules": "dir", "/w/.git/modules/lib/modules/sub": "dir",
	"/w/.git/y": "link /w/evil/inner", "/w/lnk": "link evil", "/w/gl": "link .git",
	"/w/inlnk": "link lib", "/w/dangling": "link /nowhere", "/w/plain": "file",
	"/outside": "dir", "/outside/deep": "dir", "/w/.git/modules/out": "link /outside/deep",
}

// guardedRules guard what the default protect list guards in /w/.git.
func guardedRules() Rules {
	return Rules{
		Refuse: func(p string) string {
			for _, g := range []string{"/w/.git/hooks", "/w/.git/config", "/w/.git/commondir", "/w/.git/worktrees/"} {
				if p == g || strings.HasPrefix(p, g) {
					return "protect " + g
				}
			}
			for _, f := range []string{"/hooks", "/config", "/commondir"} {
				if strings.HasPrefix(p, "/w/.git/modules/") && strings.HasSuffix(p, f) {
					return "protect /w/.git/modules/**" + f
				}
			}
			return ""
		},
		Resolve: repoFS.resolve,
	}
}

// TestGitFile is finding 2 of issue 21 decided once for every writer: a
// ".git" file's gitdir is decided where the kernel takes it, and only a
// guarded gitdir is taken.
func TestGitFile(t *testing.T) {
	r := guardedRules()
	for _, tc := range []struct {
		name, p, data string
		want          string // "" when taken, else a part of the refusal
	}{
		{"a submodule's gitdir", "/w/lib/.git", "gitdir: ../.git/modules/lib\n", ""},
		{"a nested submodule's", "/w/lib/sub/.git", "gitdir: ../../.git/modules/lib/modules/sub\n", ""},
		{"a submodule's gitdir not made yet", "/w/lib/.git", "gitdir: ../.git/modules/new\n", ""},
		{"a linked worktree's, absolute", "/w/wt/.git", "gitdir: /w/.git/worktrees/wt\n", ""},
		{"the main .git", "/w/sub/.git", "gitdir: ../.git\n", ""},
		{"CRLF", "/w/lib/.git", "gitdir: ../.git/modules/lib\r\n", ""},
		{"no redirect", "/w/sub/.git", "not a redirect", ""},
		{"a name other than .git", "/w/sub/notes", "gitdir: ../evil\n", ""},
		{"an unguarded directory", "/w/sub/.git", "gitdir: ../evil\n", "whose hooks no deny or protect rule guards"},
		{"outside the workspace", "/w/sub/.git", "gitdir: /outside\n", "whose hooks"},
		{"dot-dot after a name", "/w/sub/.git", "gitdir: ../.git/y/..\n", "after a name"},
		{"dot-dot after a name, absolute", "/w/sub/.git", "gitdir: /w/.git/y/..\n", "after a name"},
		{"dot-dot after a missing name", "/w/sub/.git", "gitdir: ../.git/modules/new/../../../evil\n", "after a name"},
		{"through a symlink", "/w/sub/.git", "gitdir: ../lnk\n", "goes through a symlink to /w/evil"},
		{"through a symlink to .git", "/w/sub/.git", "gitdir: ../gl\n", "goes through a symlink to /w/.git"},
		{"through a symlink in modules", "/w/sub/.git", "gitdir: ../.git/modules/out\n", "through a symlink to /outside/deep"},
		{"through a dangling symlink", "/w/sub/.git", "gitdir: ../dangling/.git/modules/x\n", "through a symlink"},
		{"missing where a link could appear", "/w/sub/.git", "gitdir: ../newdir/.git/modules/x\n", "/w/newdir could still become a symlink"},
		{"missing below an unguarded directory", "/w/sub/.git", "gitdir: ../evil/x\n", "/w/evil/x could still become a symlink"},
		{"through a file", "/w/sub/.git", "gitdir: ../plain/x\n", "does not resolve: not a directory"},
		{"empty", "/w/sub/.git", "gitdir: \n", "not one path"},
		{"two lines", "/w/sub/.git", "gitdir: ../.git\nx\n", "not one path"},
		{"too long", "/w/sub/.git", "gitdir: " + strings.Repeat("a/", 2100) + "\n", "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := GitFile(r, tc.p, []byte(tc.data))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Error("taken")
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("refused as %q; want it to say %q", err, tc.want)
			}
		})
	}
	r.Resolve = nil
	if err := GitFile(r, "/w/lib/.git", []byte("gitdir: ../.git/modules/lib\n")); err == nil {
		t.Error("a gitdir was taken by a writer that cannot resolve it")
	}
	r.Resolve = func(string) (Resolved, error) { return Resolved{}, errors.New("ELOOP") }
	if err := GitFile(r, "/w/lib/.git", []byte("gitdir: ../.git/modules/lib\n")); err == nil || !strings.Contains(err.Error(), "ELOOP") {
		t.Errorf("a resolver's failure: %v", err)
	}
}

// TestWorktree is finding 3 of issue 21 decided once for every writer:
// core.worktree is decided where git's chdir takes it, from the config's
// directory, inside the checkout and outside its .git.
func TestWorktree(t *testing.T) {
	cfg := "/w/.git/modules/lib/config"
	for _, tc := range []struct {
		name, val, cfg string
		want           string
	}{
		{"a submodule's", "../../../lib", cfg, ""},
		{"a nested submodule's", "../../../../../lib/sub", "/w/.git/modules/lib/modules/sub/config", ""},
		{"absolute", "/w/lib", cfg, ""},
		{"the checkout itself", "..", "/w/.git/config", ""},
		{"outside the checkout", "../../../../outside", cfg, "outside /w"},
		{"absolute, outside", "/outside", cfg, "outside /w"},
		{"in .git", "../../../.git/hooks", cfg, "in a .git directory"},
		{"in .git, absolute", "/w/.git/modules", cfg, "in a .git directory"},
		{"dot-dot after a name", "../../../lnk/..", cfg, "after a name"},
		{"dot-dot after a name, from .git", "../lnk/..", "/w/.git/config", "after a name"},
		{"through a symlink out", "../../../lnk", cfg, "through a symlink to /w/evil"},
		{"through a symlink in the checkout", "../../../inlnk", cfg, "through a symlink to /w/lib"},
		{"missing", "../../../missing", cfg, "does not exist"},
		{"a config outside .git", "x", "/w/config", "outside a .git directory"},
		{"empty", "", cfg, "not one path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Worktree(tc.val, tc.cfg, repoFS.resolve)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Error("taken")
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("refused as %q; want it to say %q", err, tc.want)
			}
		})
	}
	if err := Worktree("../../../lib", cfg, nil); err == nil {
		t.Error("a core.worktree was taken by a writer that cannot resolve it")
	}
	// Through GitConfig, as every writer asks it.
	if err := GitConfig([]byte("[core]\n\tworktree = \"../../../lib\"\n"), cfg, Rules{Resolve: repoFS.resolve}); err != nil {
		t.Errorf("git submodule's config: %v", err)
	}
	if err := GitConfig([]byte("[core]\n\tworktree = ../../../lnk/..\n"), cfg, Rules{Resolve: repoFS.resolve}); err == nil {
		t.Error("a core.worktree through a symlink was taken in a config")
	}
}

func TestRedirectPlace(t *testing.T) {
	for p, want := range map[string]bool{
		"/w/.git": true, "/w/sub/.git": true, "/w/.git/modules": true, "/w/.git/modules/x/y": true,
		"/w/.git/worktrees/wt": true, "/w/.git/hooks": false, "/w/modules/x": false, "/w/.git/modulesx": false,
	} {
		if got := RedirectPlace(p); got != want {
			t.Errorf("RedirectPlace(%s) = %v", p, got)
		}
	}
}

func TestDotDotAfterName(t *testing.T) {
	for p, want := range map[string]bool{
		"../.git/modules/lib": false, "../../../lib": false, "/w/.git/worktrees/wt": false,
		"../.git/y/..": true, "a/../b": true, "/w/x/../y": true, "./../x": false, "": false,
	} {
		if got := dotDotAfterName(p); got != want {
			t.Errorf("dotDotAfterName(%q) = %v", p, got)
		}
	}
}
