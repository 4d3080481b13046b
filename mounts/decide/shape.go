package decide

import (
	"path"
	"strings"
)

// Directories git takes for a repository. git's discovery looks, at each
// level from the working directory up, for DIR/.git and then at DIR
// itself: a directory holding HEAD, objects and refs is a (bare)
// repository to it, whatever its name, and its config and hooks run
// commands (core.fsmonitor, core.pager, core.hooksPath, a hook) when a
// person on the host runs git in it or below it. The protect patterns
// name .git directories only, so such a shape is guarded here, decided on
// the names alone (no pattern) and under Lock, so that its pieces cannot
// be made in an order, by threads or by writers that slip through:
//
//   - the shape: HEAD, objects and refs all present (of any type: a
//     dangling symlink or a HEAD git would not parse yet counts, so that
//     no later change outside these calls completes it unchecked);
//   - completing it (the last of the three made, by any call) is refused
//     unless the directory has no commondir and no config.worktree, its
//     hooks directory (if any) is a directory holding only "*.sample"
//     names, and its config (if any) is a regular file that the writer
//     wrote or that GitConfig takes, which the writer then rewrites
//     through a copy of its own (Verdict.Rewrite);
//   - in a shaped directory, config, config.worktree and commondir are
//     never made, linked or opened for writing by the sandbox; config is
//     replaced only as git does it, a file renamed over it whose content
//     GitConfig takes (ReplaceConfig); hooks may be made as an empty
//     directory, and only "*.sample" names go in it.
//
// `git init --bare` and `git clone --bare` make HEAD, then config (through
// config.lock), then objects, which completes the shape: their config
// holds only keys on the safe list, so it is taken and rewritten.

var (
	shapeNames  = map[string]bool{"HEAD": true, "objects": true, "refs": true}
	bareGuarded = map[string]bool{"config": true, "config.worktree": true, "commondir": true}
)

// canon is the name of the rules that name is, folding case as a
// case-insensitive file system (macOS's, a case-folded Linux directory)
// does, where git's lookup of HEAD finds "head"; "" for any other name.
// On a case-sensitive one this only refuses more. It allocates nothing:
// Relevant runs on every create.
func canon(name string) string {
	for _, k := range [...]string{"HEAD", "objects", "refs", "config", "config.worktree", "commondir", "hooks"} {
		if len(k) == len(name) && strings.EqualFold(k, name) {
			return k
		}
	}
	return ""
}

// ShapeRule is the start of every refusal by the shape rules.
const ShapeRule = "protect (a directory git takes for a repository: it holds HEAD, objects and refs)"

// ConfigRule is the start of a refusal of a git config's content.
const ConfigRule = "protect (git config from the sandbox: "

// MaxConfig is the most of a config the rules read; a longer one is
// decided on its first MaxConfig bytes, which GitConfig then refuses as
// cut (its last line has no end) or decides as git would read it.
const MaxConfig = 1 << 20

// Relevant reports whether a name made, removed or opened for writing at
// the sandbox path p may matter to the shape rules: on the name alone, so
// that every other call costs nothing.
func Relevant(p string) bool {
	i := strings.LastIndexByte(p, '/')
	if canon(p[i+1:]) != "" {
		return true
	}
	// The parent's name, without allocating: hot on every create.
	return InHooks(p)
}

func present(d Dir, name string) bool {
	_, err := d.Lstat(name)
	return err == nil
}

// Shaped reports whether d holds HEAD and either objects and refs or a
// commondir (git then looks for objects and refs, and reads the config
// and hooks, where commondir points).
func Shaped(d Dir) bool { return shapeWith(d, "") }

// shapeWith is Shaped as it would be with name present too.
func shapeWith(d Dir, name string) bool {
	has := func(n string) bool { return n == name || present(d, n) }
	return has("HEAD") && (has("commondir") || has("objects") && has("refs"))
}

// completes reports whether making name in d completes the shape: name
// is absent and the shape holds with it (replacing a HEAD, as git does on
// every symref update, changes no shape).
func completes(d Dir, name string) bool {
	name = canon(name)
	if !shapeNames[name] && name != "commondir" || present(d, name) {
		return false
	}
	return !Shaped(d) && shapeWith(d, name)
}

// Make decides a name the sandbox makes at the sandbox path p in d (a
// file, a directory when mkdir, a symlink, a link, a rename's target),
// under Lock. The pattern rules are the writer's: a name Refuse covers
// (other than HEAD, objects and refs) is left to them.
func Make(r Rules, d Dir, p string, mkdir bool) Verdict {
	if !Relevant(p) {
		return Verdict{}
	}
	name := canon(path.Base(p))
	if !shapeNames[name] && r.refuse(p) != "" {
		// A name a protect pattern covers (a .git directory's config or
		// hooks) is decided by the pattern and git's model for it.
		return Verdict{}
	}
	switch {
	case name == "commondir":
		// HEAD and a commondir make a repository whose config and hooks
		// are elsewhere: never made so by the sandbox.
		if present(d, "HEAD") {
			return refuse(ShapeRule + ": a commondir beside HEAD")
		}
	case bareGuarded[name]:
		if Shaped(d) {
			return refuse(ShapeRule + ": " + name + " is git's to write")
		}
	case name == "hooks":
		if Shaped(d) && !mkdir {
			return refuse(ShapeRule + ": only an empty hooks directory may be made")
		}
	case shapeNames[name]:
		if completes(d, name) {
			v := complete(r, d, p)
			if v.Rule == "" {
				v.Rule = hook(d, p, mkdir)
			}
			return v
		}
	}
	return refuse(hook(d, p, mkdir))
}

// hook refuses a name in a hooks directory of a shaped directory unless it
// is a new "*.sample" file (a name git never runs).
func hook(d Dir, p string, mkdir bool) string {
	if canon(path.Base(path.Dir(p))) != "hooks" {
		return ""
	}
	up, err := d.Parent()
	if err != nil || !Shaped(up) {
		return ""
	}
	name := path.Base(p)
	if !mkdir && strings.HasSuffix(name, ".sample") && !strings.HasPrefix(name, ".") {
		return ""
	}
	return ShapeRule + ": a hook"
}

// Write decides an open for writing (or a truncate) of the existing file
// at the sandbox path p in d, under Lock.
func Write(r Rules, d Dir, p string) string {
	if !Relevant(p) || r.refuse(p) != "" {
		return "" // decided by the pattern (see Make)
	}
	if name := canon(path.Base(p)); bareGuarded[name] && Shaped(d) {
		return ShapeRule + ": " + name + " is git's to write"
	}
	return hook(d, p, false)
}

// complete decides the call that completes the shape in d (see the
// comment at the top); a config it takes is returned to be rewritten.
func complete(r Rules, d Dir, p string) Verdict {
	for _, n := range []string{"commondir", "config.worktree"} {
		if present(d, n) {
			return refuse(ShapeRule + ": it holds " + n)
		}
	}
	if e, err := d.Lstat("hooks"); err == nil {
		if e.Type != dirType {
			return refuse(ShapeRule + ": its hooks is no directory")
		}
		names, err := d.Names("hooks")
		if err != nil {
			return refuse(ShapeRule + ": its hooks cannot be read")
		}
		for _, n := range names {
			if !strings.HasSuffix(n, ".sample") || strings.HasPrefix(n, ".") {
				return refuse(ShapeRule + ": it holds the hook " + n)
			}
		}
	}
	e, err := d.Lstat("config")
	switch {
	case err != nil && isNotExist(err):
		return Verdict{}
	case err != nil || e.Type != 0:
		return refuse(ShapeRule + ": its config is no regular file")
	}
	cfg := path.Join(path.Dir(p), "config")
	if r.refuse(cfg) != "" {
		// A config a protect pattern covers (a .git directory's) is never
		// written by the sandbox: the writer's own is taken as it is, the
		// host's is never rewritten.
		if r.wrote(e) {
			return Verdict{}
		}
		return refuse(ShapeRule + ": its config is protected")
	}
	// Any other config is checked and rewritten, even one the writer
	// wrote: the sandbox may have written it while the shape was
	// incomplete (rm HEAD, write, make HEAD again). One that belongs to
	// another user than the writer acts as (a host file named config the
	// shape was built around) is refused rather than rewritten as
	// someone else's.
	if e.UID != uint32(r.UID) {
		return refuse(ShapeRule + ": its config belongs to another user")
	}
	data, mode, err := d.ReadFile("config", MaxConfig)
	if err != nil {
		return refuse(ShapeRule + ": its config cannot be read")
	}
	if err := GitConfig(data, cfg, r); err != nil {
		return refuse(ConfigRule + err.Error() + ")")
	}
	return Verdict{Rewrite: &Rewrite{Name: "config", Data: data, Mode: mode}}
}

// ReplaceConfig decides a file renamed over (or written as) the config at
// the sandbox path p in the shaped directory d, with content data, the
// one way git changes a repository's config (config.lock renamed over
// it): only a new config or one the writer wrote, and only content
// GitConfig takes. The caller writes it through a copy of its own. A
// config a pattern covers is the pattern's (see Make).
func ReplaceConfig(r Rules, d Dir, p string, data []byte) string {
	if e, err := d.Lstat(path.Base(p)); err == nil && !r.wrote(e) {
		return ShapeRule + ": config is git's to write"
	} else if err != nil && !isNotExist(err) {
		return ShapeRule + ": its config cannot be read"
	}
	if err := GitConfig(data, p, r); err != nil {
		return ConfigRule + err.Error() + ")"
	}
	return ""
}

// ConfigReplaced reports whether a rename to the sandbox path p in d is
// decided by ReplaceConfig: the config of a shaped directory no pattern
// covers.
func ConfigReplaced(r Rules, d Dir, p string) bool {
	return canon(path.Base(p)) == "config" && Shaped(d) && r.refuse(p) == ""
}
