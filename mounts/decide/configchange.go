package decide

import (
	"fmt"
	"path"
	"strings"
)

// A repository's config that exists already (the host's .git/config, a
// submodule's .git/modules/NAME/config) is changed from the sandbox only
// as `git submodule init`, `update --init` and `deinit` change it: they
// register submodule.NAME.url and submodule.NAME.active (and copy a
// submodule.NAME.update that is no command), and rewrite core.worktree in
// a submodule's gitdir. Every other line stays as it was, in its order,
// so that no key that names code (core.hooksPath, core.fsmonitor, alias.*,
// include.path) can be added, removed, moved or changed.

// changeKeys are the keys an existing config may gain, lose or change.
var changeKeys = map[string]bool{
	"submodule.*.url": true, "submodule.*.active": true, "submodule.*.update": true, "core.worktree": true,
}

// ChangeKeys lists changeKeys, for messages and docs.
const ChangeKeys = "submodule.NAME.url, submodule.NAME.active, submodule.NAME.update (checkout, rebase, merge or none), core.worktree (the same directory, or a submodule's checkout)"

// GitConfigChange decides data, the new content of the existing git config
// at the sandbox path cfg whose content is old: only keys of changeKeys
// may differ, each new value decided as GitConfig decides it, and a
// changed core.worktree must resolve (by r.Resolve, as the kernel does) to
// the directory the old one did (a repository's, or a submodule's in
// .git/modules/NAME/config: a relative core.hooksPath is taken from the
// work tree, so a new one could name hooks nothing protects). An old config
// this package cannot read is never changed.
func GitConfigChange(old, data []byte, cfg string, r Rules) error {
	was, err := parseConfig(old)
	if err != nil {
		return fmt.Errorf("the repository's config has a form cordon does not decide (%w): change it on the host", err)
	}
	now, err := parseConfig(data)
	if err != nil {
		return err
	}
	keep := func(es []configEntry) []configEntry {
		var out []configEntry
		for _, e := range es {
			if !changeKeys[e.pattern] {
				out = append(out, e)
			}
		}
		return out
	}
	a, b := keep(was), keep(now)
	for i := 0; i < len(a) || i < len(b); i++ {
		if i >= len(a) || i >= len(b) || a[i].key != b[i].key || a[i].val != b[i].val || a[i].bare != b[i].bare {
			at := "the end"
			if i < len(b) {
				at = fmt.Sprintf("line %d (%s)", b[i].line, b[i].pattern)
			} else if i < len(a) {
				at = fmt.Sprintf("%s, removed", a[i].pattern)
			}
			return fmt.Errorf("%s: an existing repository's config may change only %s; every other line stays as it is", at, ChangeKeys)
		}
	}
	seen := map[string]int{}
	for _, e := range was {
		seen[entryID(e)]++
	}
	for _, e := range now {
		if !changeKeys[e.pattern] {
			continue
		}
		if k := entryID(e); seen[k] > 0 {
			seen[k]--
			continue
		}
		if e.pattern == "core.worktree" {
			if err := changedWorktree(e, was, cfg, r); err != nil {
				return err
			}
			continue
		}
		if err := safeEntry(e, cfg, r); err != nil {
			return err
		}
	}
	return nil
}

// changedWorktree decides a core.worktree e that the old config did not
// hold with that value: only where it resolves to the same directory as
// the old one's.
func changedWorktree(e configEntry, was []configEntry, cfg string, r Rules) error {
	val, resolve := e.val, r.Resolve
	if resolve != nil && !dotDotAfterName(val) {
		newAt, nerr := resolve(fromConfig(cfg, val))
		for _, o := range was {
			if o.pattern != "core.worktree" || nerr != nil {
				continue
			}
			ov := o.val
			if dotDotAfterName(ov) {
				continue
			}
			if oldAt, err := resolve(fromConfig(cfg, ov)); err == nil && oldAt.Missing == 0 && newAt == oldAt && symlinkFree(fromConfig(cfg, val), newAt.Path) {
				return nil
			}
		}
	}
	// A host's submodule keeps its work tree: moved to another directory
	// of the checkout, the hooks of a relative core.hooksPath (the host's
	// global one, or the submodule's) would be taken from there, where
	// nothing was protected when the run started.
	return fmt.Errorf("line %d: core.worktree %s: an existing repository's config keeps its core.worktree where it leads (git submodule rewrites it to the same directory); move a submodule on the host", e.line, val)
}

// fromConfig is where git takes the core.worktree val of the config cfg:
// from the config's directory when relative.
func fromConfig(cfg, val string) string {
	if strings.HasPrefix(val, "/") {
		return val
	}
	return path.Dir(cfg) + "/" + val
}

// entryID names an entry by what git reads of it: its key, its value, and
// whether it has one.
func entryID(e configEntry) string {
	return fmt.Sprintf("%s\x00%s\x00%v", e.key, e.val, e.bare)
}
