package decide

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// What git itself needs of guarded paths in a repository the sandbox
// creates (git init, git clone), without giving it a way to plant code:
//
//   - git's templates: the hooks directory, made empty, and "*.sample"
//     files created in it; git never runs a hook by that name, and no
//     other name can be created, renamed or linked there (TemplateAllowed);
//   - a new repository's config: only when every key is on a short list
//     that runs nothing (core.bare, remote.NAME.url, branch.NAME.merge,
//     ...), written by the writer through a file of its own (GitConfig).

// TemplateAllowed reports whether a refusal by rule may be waived for
// git's templates: mkdir of the hooks directory itself, or a new
// "*.sample" file directly in it.
func TemplateAllowed(rule, p string, dir bool) bool {
	if !strings.HasPrefix(rule, "protect ") || !strings.HasSuffix(rule, "/hooks") {
		return false
	}
	if dir {
		return path.Base(p) == "hooks"
	}
	return path.Base(path.Dir(p)) == "hooks" && strings.HasSuffix(p, ".sample") && !strings.HasPrefix(path.Base(p), ".")
}

// safeGitKeys are the config keys (section.key, or section.*.key with a
// subsection) a new repository may set: none of them runs anything.
var safeGitKeys = map[string]bool{
	"core.repositoryformatversion": true, "core.filemode": true, "core.bare": true,
	"core.logallrefupdates": true, "core.ignorecase": true, "core.precomposeunicode": true,
	"core.symlinks": true, "core.autocrlf": true, "core.eol": true, "core.worktree": true,
	"extensions.objectformat": true, "extensions.refstorage": true,
	"remote.*.url": true, "remote.*.fetch": true, "remote.*.tagopt": true, "remote.*.mirror": true,
	"branch.*.remote": true, "branch.*.merge": true, "branch.*.rebase": true,
	"submodule.*.url": true, "submodule.*.active": true, "submodule.*.update": true,
	"submodule.active": true, "submodule.recurse": true,
	"user.name": true, "user.email": true, "init.defaultbranch": true,
	"pull.rebase": true, "fetch.prune": true, "gc.auto": true, "index.version": true,
}

// configEntry is one key of a git config as git reads it (parseConfig):
// pattern is section.key or section.*.key (what safeGitKeys lists), key
// the same with the subsection itself, quoted (section."sub".key), val
// the value git passes on (its quotes and escapes undone, its comment and
// outer spaces gone).
type configEntry struct {
	line              int
	pattern, key, val string
	bare              bool // no "=": a boolean true
}

// GitConfig parses the git config that is to be at the sandbox path cfg
// and refuses anything it cannot read or any key off the list (and a
// remote URL with a command transport). A core.worktree is decided by
// Worktree, on the writer's resolution of it (r.Resolve; nil refuses it),
// and must lie where no rule of r guards.
func GitConfig(data []byte, cfg string, r Rules) error {
	entries, err := parseConfig(data)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := safeEntry(e, cfg, r); err != nil {
			return err
		}
	}
	return nil
}

// submoduleUpdate are the values of submodule.NAME.update that run
// nothing ("!command" runs one).
var submoduleUpdate = map[string]bool{"checkout": true, "rebase": true, "merge": true, "none": true}

// safeEntry decides one key a config from the sandbox sets.
func safeEntry(e configEntry, cfg string, r Rules) error {
	if !safeGitKeys[e.pattern] {
		return fmt.Errorf("line %d: %s is not a key a config may set from the sandbox; it may set only %s", e.line, e.pattern, safeKeyList())
	}
	v := strings.ToLower(e.val)
	switch {
	case strings.HasPrefix(v, "ext::") || strings.HasPrefix(v, "fd::"):
		return fmt.Errorf("line %d: a remote URL with a command transport", e.line)
	case e.pattern == "submodule.*.update" && !submoduleUpdate[e.val]:
		return fmt.Errorf("line %d: submodule.NAME.update %s: only checkout, rebase, merge or none (a \"!command\" runs it)", e.line, e.val)
	case e.pattern == "core.worktree":
		if err := worktreeIn(r, e.val, cfg); err != nil {
			return fmt.Errorf("line %d: %w", e.line, err)
		}
	}
	return nil
}

// safeKeyList is safeGitKeys, sorted, for messages.
func safeKeyList() string {
	keys := make([]string, 0, len(safeGitKeys))
	for k := range safeGitKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
