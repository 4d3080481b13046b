package decide

import (
	"io/fs"
	"strings"
	"testing"
)

// memDir is a directory held in memory: the decisions are pure functions
// of what a Dir reports, so their table needs no file system.
type memDir struct {
	ents  map[string]Entry
	names map[string][]string // a subdirectory's names
	data  map[string]string   // a regular file's content
	up    Dir
}

// tree builds a memDir from specs: "file NAME [CONTENT]", "dir NAME",
// "link NAME", "file:UID NAME CONTENT", and "in DIR NAME" for a name in
// the subdirectory DIR.
func tree(up Dir, specs ...string) *memDir {
	d := &memDir{ents: map[string]Entry{}, names: map[string][]string{}, data: map[string]string{}, up: up}
	for i, s := range specs {
		f := strings.SplitN(s, " ", 3)
		e := Entry{Ino: uint64(i + 1)}
		switch {
		case f[0] == "in":
			d.names[f[1]] = append(d.names[f[1]], f[2])
			continue
		case f[0] == "dir":
			e.Type = fs.ModeDir
		case f[0] == "link":
			e.Type = fs.ModeSymlink
		case f[0] == "file:other":
			e.UID = 4242
		}
		d.ents[f[1]] = e
		if len(f) == 3 {
			d.data[f[1]] = f[2]
		}
	}
	return d
}

func (d *memDir) Lstat(name string) (Entry, error) {
	if e, ok := d.ents[name]; ok {
		return e, nil
	}
	return Entry{}, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
}

func (d *memDir) Names(name string) ([]string, error) {
	if d.ents[name].Type != fs.ModeDir {
		return nil, fs.ErrNotExist
	}
	return d.names[name], nil
}

func (d *memDir) ReadFile(name string, limit int64) ([]byte, uint32, error) {
	e, ok := d.ents[name]
	if !ok || e.Type != 0 {
		return nil, 0, fs.ErrPermission
	}
	b := []byte(d.data[name])
	if int64(len(b)) > limit {
		b = b[:limit]
	}
	return b, 0o644, nil
}

func (d *memDir) Parent() (Dir, error) {
	if d.up == nil {
		return nil, fs.ErrNotExist
	}
	return d.up, nil
}

const (
	evilCfg = "[core]\n\tpager = touch /tmp/pwned\n"
	safeCfg = "[core]\n\tbare = true\n"
)

// protectGit is the default list's kind of rule: a .git directory's
// config and hooks.
func protectGit(p string) string {
	for _, g := range []string{"/w/.git/config", "/w/.git/hooks"} {
		if p == g || strings.HasPrefix(p, g+"/") {
			return "protect " + g
		}
	}
	return ""
}

func TestMakeShapes(t *testing.T) {
	rules := Rules{Refuse: protectGit, UID: 0}
	shaped := func(extra ...string) *memDir {
		return tree(nil, append([]string{"file HEAD", "dir objects", "dir refs"}, extra...)...)
	}
	for _, tc := range []struct {
		name    string
		d       *memDir
		p       string
		mkdir   bool
		want    string // a substring of the refusal, "" for allowed
		rewrite bool
	}{
		{"HEAD completes, no config", tree(nil, "dir objects", "dir refs"), "/w/r/HEAD", false, "", false},
		{"HEAD completes around a planted config", tree(nil, "dir objects", "dir refs", "file config "+evilCfg), "/w/r/HEAD", false, "core.pager", false},
		{"objects completes around a safe config: rewritten", tree(nil, "file HEAD", "dir refs", "file config "+safeCfg), "/w/r/objects", true, "", true},
		{"refs completes around another user's config", tree(nil, "file HEAD", "dir objects", "file:other config "+safeCfg), "/w/r/refs", true, "another user", false},
		{"a dangling symlink completes", tree(nil, "file HEAD", "dir refs", "file config "+evilCfg), "/w/r/objects", false, "core.pager", false},
		{"objects as a link counts", tree(nil, "link objects", "dir refs", "file config "+evilCfg), "/w/r/HEAD", false, "core.pager", false},
		{"a config that is a symlink", tree(nil, "dir objects", "dir refs", "link config"), "/w/r/HEAD", false, "no regular file", false},
		{"completes around a hook", tree(nil, "dir objects", "dir refs", "dir hooks", "in hooks pre-commit"), "/w/r/HEAD", false, "the hook pre-commit", false},
		{"completes around samples", tree(nil, "dir objects", "dir refs", "dir hooks", "in hooks pre-commit.sample"), "/w/r/HEAD", false, "", false},
		{"completes around a hooks file", tree(nil, "dir objects", "dir refs", "file hooks"), "/w/r/HEAD", false, "no directory", false},
		{"completes beside a commondir", tree(nil, "dir objects", "dir refs", "file commondir"), "/w/r/HEAD", false, "commondir", false},
		{"completes beside a config.worktree", tree(nil, "dir objects", "dir refs", "file config.worktree"), "/w/r/HEAD", false, "config.worktree", false},
		{"HEAD replaced in a shape", shaped("file config " + evilCfg), "/w/r/HEAD", false, "", false},
		{"commondir beside HEAD", tree(nil, "file HEAD"), "/w/r/commondir", false, "commondir beside HEAD", false},
		{"config in a shape", shaped(), "/w/r/config", false, "git's to write", false},
		{"config.worktree in a shape", shaped(), "/w/r/config.worktree", false, "git's to write", false},
		{"config outside a shape", tree(nil, "file HEAD", "dir refs"), "/w/r/config", false, "", false},
		{"an empty hooks directory in a shape", shaped(), "/w/r/hooks", true, "", false},
		{"a hooks file in a shape", shaped(), "/w/r/hooks", false, "empty hooks directory", false},
		{"a hook in a shape's hooks", tree(shaped()), "/w/r/hooks/post-checkout", false, "a hook", false},
		{"a sample in a shape's hooks", tree(shaped()), "/w/r/hooks/post-checkout.sample", false, "", false},
		{"a hidden sample in a shape's hooks", tree(shaped()), "/w/r/hooks/.x.sample", false, "a hook", false},
		{"a directory in a shape's hooks", tree(shaped()), "/w/r/hooks/x.sample", true, "a hook", false},
		{"a hook where the parent is no shape", tree(tree(nil, "file HEAD")), "/w/r/hooks/post-checkout", false, "", false},
		{"a name no rule reads", shaped(), "/w/r/main.go", false, "", false},
		{"head completes, folded as macOS folds it", tree(nil, "dir objects", "dir refs", "file config "+evilCfg), "/w/r/head", false, "core.pager", false},
		{"Config in a shape, folded", shaped(), "/w/r/Config", false, "git's to write", false},
		{"a hook in a shape's Hooks, folded", tree(shaped()), "/w/r/Hooks/pre-commit", false, "a hook", false},
		{"a protected config is the pattern's", tree(nil, "file HEAD", "dir objects", "dir refs"), "/w/.git/config", false, "", false},
		{"HEAD completes a .git around a protected config", tree(nil, "dir objects", "dir refs", "file config "+safeCfg), "/w/.git/HEAD", false, "its config is protected", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Make(rules, tc.d, tc.p, tc.mkdir)
			if tc.want == "" && v.Rule != "" || tc.want != "" && !strings.Contains(v.Rule, tc.want) {
				t.Errorf("Make(%s) = %q; want %q", tc.p, v.Rule, tc.want)
			}
			if tc.want != "" && !strings.HasPrefix(v.Rule, "protect (") {
				t.Errorf("Make(%s) = %q; want a protect rule", tc.p, v.Rule)
			}
			if (v.Rewrite != nil) != tc.rewrite {
				t.Errorf("Make(%s) rewrite = %v; want %v", tc.p, v.Rewrite, tc.rewrite)
			}
			if v.Rewrite != nil && (v.Rewrite.Name != "config" || string(v.Rewrite.Data) != safeCfg) {
				t.Errorf("Make(%s) rewrites %+v", tc.p, v.Rewrite)
			}
		})
	}
}

// TestMakeWroteItself: the config a writer wrote itself (the broker's copy
// of git's) is taken under a pattern; the same config of anyone else's is
// refused.
func TestMakeWroteItself(t *testing.T) {
	d := tree(nil, "dir objects", "dir refs", "file config "+safeCfg)
	mine := d.ents["config"]
	rules := Rules{Refuse: protectGit, Wrote: func(e Entry) bool { return e == mine }}
	if v := Make(rules, d, "/w/.git/HEAD", false); v.Rule != "" || v.Rewrite != nil {
		t.Errorf("the writer's own protected config: %+v", v)
	}
	rules.Wrote = nil
	if v := Make(rules, d, "/w/.git/HEAD", false); v.Rule == "" {
		t.Error("a protected config the writer did not write: taken")
	}
}

func TestWriteAndReplaceConfig(t *testing.T) {
	rules := Rules{Refuse: protectGit}
	shaped := tree(nil, "file HEAD", "dir objects", "dir refs")
	withCfg := tree(nil, "file HEAD", "dir objects", "dir refs", "file config "+safeCfg)
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"write a shape's config", Write(rules, withCfg, "/w/r/config"), "git's to write"},
		{"write a shape's HEAD", Write(rules, withCfg, "/w/r/HEAD"), ""},
		{"write a hook in a shape", Write(rules, tree(withCfg), "/w/r/hooks/pre-commit"), "a hook"},
		{"write a protected config: the pattern's", Write(rules, withCfg, "/w/.git/config"), ""},
		{"a new safe config", ReplaceConfig(rules, shaped, "/w/r/config", []byte(safeCfg)), ""},
		{"a new config with core.pager", ReplaceConfig(rules, shaped, "/w/r/config", []byte(evilCfg)), "core.pager"},
		{"a config with core.worktree, none resolved", ReplaceConfig(rules, shaped, "/w/r/config", []byte("[core]\n\tworktree = ..\n")), "core.worktree"},
		{"over a config the writer did not write", ReplaceConfig(rules, withCfg, "/w/r/config", []byte(safeCfg)), "git's to write"},
	} {
		if tc.want == "" && tc.got != "" || tc.want != "" && !strings.Contains(tc.got, tc.want) {
			t.Errorf("%s: %q; want %q", tc.name, tc.got, tc.want)
		}
	}
	mine := withCfg.ents["config"]
	rules.Wrote = func(e Entry) bool { return e == mine }
	if got := ReplaceConfig(rules, withCfg, "/w/r/config", []byte(safeCfg)); got != "" {
		t.Errorf("over the writer's own config: %q", got)
	}
	if !ConfigReplaced(rules, shaped, "/w/r/config") || ConfigReplaced(rules, shaped, "/w/.git/config") || ConfigReplaced(rules, tree(nil, "file HEAD"), "/w/r/config") {
		t.Error("ConfigReplaced: wrong on a shape's config, a protected one or one outside a shape")
	}
	if err := GitConfig([]byte("[core]\n\tworktree = ../../../lib\n"), "/w/.git/modules/lib/config", Rules{Resolve: repoFS.resolve}); err != nil {
		t.Errorf("a core.worktree the writer takes: %v", err)
	}
}
