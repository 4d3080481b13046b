package decide

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
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
	"submodule.*.url": true, "submodule.*.active": true, "submodule.active": true, "submodule.recurse": true,
	"user.name": true, "user.email": true, "init.defaultbranch": true,
	"pull.rebase": true, "fetch.prune": true, "gc.auto": true, "index.version": true,
}

// GitConfig parses the git config that is to be at the sandbox path cfg
// and refuses anything it cannot read or any key off the list (and a
// remote URL with a command transport). A core.worktree is decided by
// Worktree, on the writer's resolution of it (nil refuses it).
func GitConfig(data []byte, cfg string, resolve Resolver) error {
	section, sub := "", false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			return fmt.Errorf("line %d: a continued line", n)
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 || strings.TrimSpace(line[end+1:]) != "" {
				return fmt.Errorf("line %d: a section header with more on its line", n)
			}
			h := line[1:end]
			name, rest, hasSub := strings.Cut(h, " ")
			section, sub = strings.ToLower(name), hasSub
			if hasSub && !(strings.HasPrefix(strings.TrimSpace(rest), "\"") && strings.HasSuffix(rest, "\"")) {
				return fmt.Errorf("line %d: a subsection that is not quoted", n)
			}
			if strings.Contains(section, ".") {
				return fmt.Errorf("line %d: the old [section.subsection] form", n)
			}
			continue
		}
		key, val, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		full := section + "." + key
		if sub {
			full = section + ".*." + key
		}
		if !safeGitKeys[full] {
			return fmt.Errorf("line %d: %s is not a key a new repository's config may set from the sandbox", n, full)
		}
		v := strings.Trim(strings.ToLower(val), "\"")
		if strings.HasPrefix(v, "ext::") || strings.HasPrefix(v, "fd::") {
			return fmt.Errorf("line %d: a remote URL with a command transport", n)
		}
		if full == "core.worktree" {
			if err := Worktree(strings.Trim(val, "\""), cfg, resolve); err != nil {
				return fmt.Errorf("line %d: %w", n, err)
			}
		}
	}
	return sc.Err()
}
