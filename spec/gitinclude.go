package spec

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A protected git config can pull in other files (include.path,
// includeIf.<condition>.path): git reads them as part of the config, so a
// core.fsmonitor or an alias planted in one runs as if it were in the
// config itself. Each file a protected config that exists when the sandbox
// is built includes, directly or through another included file, is
// protected too when it lies where the sandbox can write (the workspace or
// a read-write mount): writes refused, reads allowed. Protect patterns are
// not walked for this (a walk of every .git below the workspace on every
// run); the configs read are the literal protect entries named config or
// config.worktree, and the submodule and worktree configs below a
// protected .git/config's directory (.git/modules/**/config,
// .git/worktrees/*/config.worktree).

// maxGitIncludes bounds the files followed from one sandbox's configs.
const maxGitIncludes = 256

// gitIncludes returns the files sb's protected git configs include that
// lie where the sandbox can write and are not protected already.
func gitIncludes(sb *Sandbox) []string {
	configs := protectedConfigs(sb)
	var out []string
	seen := map[string]bool{}
	queue := slices.Clone(configs)
	for len(queue) > 0 && len(seen) < maxGitIncludes {
		cfg := queue[0]
		queue = queue[1:]
		if seen[cfg] {
			continue
		}
		seen[cfg] = true
		for _, raw := range includesOf(cfg) {
			// Where git takes it: resolved as the host's kernel does,
			// never cleaned first; the links on the way are protected
			// too, so that none can be turned elsewhere.
			inc, links, ok := hostWalk(raw)
			if !ok {
				continue
			}
			for _, p := range append(links, inc) {
				if !slices.Contains(out, p) && sandboxWritable(sb, p) && !protectedBy(sb.Protect, p) {
					out = append(out, p)
				}
			}
			if !seen[inc] {
				queue = append(queue, inc)
			}
		}
	}
	return out
}

// gitSubConfigs lists the configs of submodules and linked worktrees kept
// in the gitdir dir.
func gitSubConfigs(dir string) []string {
	var out []string
	n := 0
	_ = filepath.WalkDir(filepath.Join(dir, "modules"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > 10000 {
			return fs.SkipAll
		}
		if d.Type().IsRegular() && (d.Name() == "config" || d.Name() == "config.worktree") {
			out = append(out, p)
		}
		if d.IsDir() && (d.Name() == "objects" || d.Name() == "refs" || d.Name() == "logs") {
			return fs.SkipDir
		}
		return nil
	})
	if m, err := filepath.Glob(filepath.Join(dir, "worktrees", "*", "config.worktree")); err == nil {
		out = append(out, m...)
	}
	return out
}

// includesOf returns the absolute paths the git config file cfg includes
// (every include.path and includeIf.*.path, whatever the condition), as
// written: not cleaned, for hostWalk to resolve.
func includesOf(cfg string) []string {
	data, err := readGitConfig(cfg)
	if err != nil {
		return nil
	}
	var out []string
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			h := strings.TrimSpace(line[1:end])
			name, _, _ := strings.Cut(h, " ")
			section = strings.ToLower(name)
			rest := strings.TrimSpace(line[end+1:])
			if rest == "" {
				continue
			}
			line = rest // "[include] path = x" on one line
		}
		if section != "include" && section != "includeif" {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(key), "path") {
			continue
		}
		val = strings.TrimSpace(val)
		if q, ok := strings.CutPrefix(val, "\""); ok {
			val, _, _ = strings.Cut(q, "\"")
		} else if i := strings.IndexAny(val, "#;"); i >= 0 {
			val = strings.TrimSpace(val[:i])
		}
		if val == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(val, "~/"); ok {
			home, err := os.UserHomeDir()
			if err != nil {
				continue
			}
			val = home + "/" + rest
		}
		if !filepath.IsAbs(val) {
			val = filepath.Dir(cfg) + "/" + val // not cleaned: see hostWalk
		}
		out = append(out, val)
	}
	return out
}

// sandboxWritable reports whether p lies in the workspace or a mount the
// sandbox may write.
func sandboxWritable(sb *Sandbox, p string) bool {
	if sb.Root != "" && !sb.Readonly && within(p, sb.Root) {
		return true
	}
	for _, m := range sb.Mounts {
		t := m.Target
		if t == "" {
			t = m.Source
		}
		if !m.Readonly && within(p, t) {
			return true
		}
	}
	return false
}

// protectedBy reports whether a literal entry of protect covers p.
func protectedBy(protect []string, p string) bool {
	for _, e := range protect {
		if !IsPattern(e) && within(p, e) {
			return true
		}
	}
	return false
}

// gitDirProtect are the paths protected in a read-write mount of a git
// directory (a mount whose source is named .git): what the default list
// protects in the workspace's own .git, except that a linked worktree's
// own state (.git/worktrees/NAME: HEAD, index, logs) stays writable, so
// git works in a linked worktree whose main repository is mounted so.
var gitDirProtect = []string{
	"hooks", "config", "commondir", "config.worktree",
	"modules/**/hooks", "modules/**/config", "modules/**/commondir", "modules/**/config.worktree",
	"worktrees/*/commondir", "worktrees/*/config.worktree", "worktrees/*/gitdir",
	"worktrees/*/hooks", "worktrees/*/config",
}

// gitDirMounts returns the protect entries of sb's read-write mounts of a
// git directory (their target joined with each of gitDirProtect).
func gitDirMounts(sb *Sandbox) []string {
	var out []string
	for _, m := range sb.Mounts {
		if m.Readonly || filepath.Base(m.Source) != ".git" {
			continue
		}
		t := m.Target
		if t == "" {
			t = m.Source
		}
		for _, p := range gitDirProtect {
			e := filepath.Join(t, p)
			if !slices.Contains(sb.Protect, e) {
				out = append(out, e)
			}
		}
	}
	return out
}
