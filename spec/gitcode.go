package spec

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Git settings that name code or a place code is taken from: a protected
// config (and what it includes), and the host's global and system configs,
// can send git to a hooks directory other than .git/hooks
// (core.hooksPath: husky's .husky/_, a .githooks folder) or name a
// program git runs (core.fsmonitor, core.pager, an alias starting with
// "!", a filter, ...). Where that directory or program lies where the
// sandbox can write, the sandbox would plant code there for the host's
// next git to run. So, when the sandbox is built, each such place is
// protected like .git/hooks (writes refused, reads allowed), together with
// every symbolic link on the way to it that the sandbox could write:
//
//   - core.hooksPath: a relative value is taken from the top of each
//     worktree the config applies to, "~/" from the home directory;
//   - the program-valued keys (gitProgramKeys): the value is a shell
//     command line, of which the first word is the program (a value that
//     does not start with a plain word, such as "$X" or "(cd ..)", names
//     nothing followed); a word with a slash is a path, taken from the top
//     of each worktree when relative; a word without one is looked up in
//     the host's PATH (absolute entries), and the name is protected in
//     each writable PATH directory up to the first that holds it;
//     credential.helper is "git credential-NAME" unless absolute or "!";
//     gpg.program is a program path, not a command line;
//   - which worktrees a config applies to: a repository's config
//     (W/.git/config, W/.git/config.worktree) applies to W, a submodule's
//     (.git/modules/NAME/config) to its core.worktree, an included file to
//     what its includer applies to, and the host's global and system
//     configs to every repository the sandbox is given: the workspace's
//     own (when it holds a .git) and those of the protect list;
//   - paths are resolved as the host's kernel resolves them (hostWalk),
//     never cleaned first; a place that does not exist yet is protected at
//     its first missing name, so that nothing can be made there; a link on
//     the way is protected too, which the guard mounts refuse to cover
//     (the run stops, naming the link: the user points the setting at the
//     real path), rather than leave a link the sandbox could turn.
//
// Not followed: environment variables in values, a program started by
// another (a script's own content is the user's to review), and
// repositories the sandbox is not given as above.

// gitProgramKeys are the keys whose value is a command line git runs
// ("*" is any subsection).
var gitProgramKeys = map[string]bool{
	"core.fsmonitor": true, "core.sshcommand": true, "core.editor": true, "core.pager": true,
	"core.askpass": true, "sequence.editor": true, "interactive.difffilter": true,
	"filter.*.clean": true, "filter.*.smudge": true, "filter.*.process": true,
	"diff.*.textconv": true, "diff.*.command": true, "merge.*.driver": true,
	"difftool.*.cmd": true, "mergetool.*.cmd": true, "credential.helper": true,
	"credential.*.helper": true, "gpg.program": true, "gpg.*.program": true,
	"gpg.ssh.defaultkeycommand": true, "pager.*": true,
	// Found by the hostile review of issue 21, and by reading git-config(1):
	"diff.external": true, "core.gitproxy": true, "core.alternaterefscommand": true,
	"remote.*.uploadpack": true, "remote.*.receivepack": true,
	"difftool.*.path": true, "mergetool.*.path": true, "browser.*.cmd": true, "browser.*.path": true,
	"sendemail.sendmailcmd": true, "sendemail.smtpserver": true, "trailer.*.command": true, "trailer.*.cmd": true,
}

// gitConfigRead is one config file read and the worktrees it applies to.
type gitConfigRead struct {
	file      string
	worktrees []string
}

// gitCodePaths returns the places the git configs sb's repositories read
// name as code (see above) that lie where the sandbox can write and are not
// protected already.
func gitCodePaths(sb *Sandbox) []string {
	var out []string
	add := func(p string) {
		if p != "" && sandboxWritable(sb, p) && !protectedBy(sb.Protect, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	addWalked := func(p string) {
		end, links, ok := hostWalk(p)
		if !ok {
			return
		}
		for _, l := range links {
			add(l)
		}
		add(end)
	}
	for _, c := range gitConfigsRead(sb) {
		for _, e := range gitEntries(c.file) {
			for _, p := range gitCodeTargets(e) {
				switch {
				case p.lookup:
					for _, q := range pathCandidates(p.path) {
						addWalked(q)
					}
				case filepath.IsAbs(p.path):
					addWalked(p.path)
				default:
					for _, w := range c.worktrees {
						addWalked(w + "/" + p.path)
					}
				}
			}
		}
	}
	return out
}

// gitConfigsRead lists the configs followed: sb's protected configs and
// the host's global and system ones, with what they include.
func gitConfigsRead(sb *Sandbox) []gitConfigRead {
	var repos []string // worktrees of the repositories sb is given
	var start []gitConfigRead
	if sb.Root != "" {
		if _, err := os.Lstat(filepath.Join(sb.Root, ".git")); err == nil {
			repos = append(repos, sb.Root)
		}
	}
	for _, cfg := range protectedConfigs(sb) {
		w := configWorktree(cfg)
		if w != "" && !slices.Contains(repos, w) {
			repos = append(repos, w)
		}
		start = append(start, gitConfigRead{file: cfg, worktrees: nonEmpty(w)})
	}
	for _, g := range hostGitConfigs() {
		start = append(start, gitConfigRead{file: g, worktrees: repos})
	}
	var out []gitConfigRead
	seen := map[string]bool{}
	for len(start) > 0 && len(seen) < maxGitIncludes {
		c := start[0]
		start = start[1:]
		if seen[c.file] {
			continue
		}
		seen[c.file] = true
		out = append(out, c)
		for _, inc := range includesOf(c.file) {
			if end, _, ok := hostWalk(inc); ok && !seen[end] {
				start = append(start, gitConfigRead{file: end, worktrees: c.worktrees})
			}
		}
	}
	return out
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// protectedConfigs are the configs gitIncludes starts from: the literal
// protect entries named config or config.worktree, and the submodule and
// worktree configs below a protected .git/config's directory.
func protectedConfigs(sb *Sandbox) []string {
	var configs []string
	for _, p := range sb.Protect {
		if IsPattern(p) || !filepath.IsAbs(p) {
			continue
		}
		switch filepath.Base(p) {
		case "config", "config.worktree":
			configs = append(configs, p)
			if filepath.Base(p) == "config" && filepath.Base(filepath.Dir(p)) == ".git" {
				configs = append(configs, gitSubConfigs(filepath.Dir(p))...)
			}
		}
	}
	return configs
}

// configWorktree is the top of the worktree a repository's config applies
// to: W for W/.git/config, a submodule's core.worktree (from its gitdir)
// for .git/modules/NAME/config, a linked worktree's top (its gitdir file)
// for .git/worktrees/NAME/config.worktree; "" when none is known.
func configWorktree(cfg string) string {
	dir := filepath.Dir(cfg)
	if filepath.Base(dir) == ".git" {
		return filepath.Dir(dir)
	}
	if filepath.Base(filepath.Dir(filepath.Dir(dir))) == ".git" && filepath.Base(filepath.Dir(dir)) == "worktrees" {
		b, err := os.ReadFile(filepath.Join(dir, "gitdir"))
		if err != nil {
			return ""
		}
		g, _, ok := hostWalk(strings.TrimRight(string(b), "\r\n"))
		if !ok || filepath.Base(g) != ".git" {
			return ""
		}
		return filepath.Dir(g)
	}
	for _, e := range gitEntries(cfg) {
		if e.key == "core.worktree" && e.val != "" {
			w := e.val
			if !filepath.IsAbs(w) {
				w = dir + "/" + w
			}
			if end, _, ok := hostWalk(w); ok {
				return end
			}
		}
	}
	return ""
}

// hostGitConfigs are the host's global and system git configs, as git
// finds them ($GIT_CONFIG_GLOBAL, ~/.gitconfig and
// $XDG_CONFIG_HOME/git/config; $GIT_CONFIG_SYSTEM or /etc/gitconfig unless
// $GIT_CONFIG_NOSYSTEM).
func hostGitConfigs() []string {
	var out []string
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		out = append(out, g)
	} else {
		xdg := os.Getenv("XDG_CONFIG_HOME")
		if home, err := os.UserHomeDir(); err == nil {
			out = append(out, filepath.Join(home, ".gitconfig"))
			if xdg == "" {
				xdg = filepath.Join(home, ".config")
			}
		}
		if xdg != "" {
			out = append(out, filepath.Join(xdg, "git", "config"))
		}
	}
	if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
		if s := os.Getenv("GIT_CONFIG_SYSTEM"); s != "" {
			out = append(out, s)
		} else {
			out = append(out, "/etc/gitconfig")
		}
	}
	var abs []string
	for _, p := range out {
		if filepath.IsAbs(p) {
			abs = append(abs, p)
		}
	}
	return abs
}

// gitEntry is one key of a git config file: key is section.key or
// section.*.key, sub the subsection.
type gitEntry struct{ key, val string }

// gitEntries reads the keys of the git config file cfg, values unquoted.
func gitEntries(cfg string) []gitEntry {
	data, err := readGitConfig(cfg)
	if err != nil {
		return nil
	}
	var out []gitEntry
	section, sub := "", false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.Trim(sc.Text(), gitSpace)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			name, _, hasSub := strings.Cut(strings.Trim(line[1:end], gitSpace), " ")
			section, sub = strings.ToLower(name), hasSub
			if dot := strings.IndexByte(section, '.'); dot >= 0 {
				section, sub = section[:dot], true // [section.sub]
			}
			line = strings.Trim(line[end+1:], gitSpace)
			if line == "" {
				continue
			}
		}
		key, val, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.Trim(key, gitSpace))
		full := section + "." + key
		if sub {
			full = section + ".*." + key
		}
		out = append(out, gitEntry{key: full, val: gitValue(strings.Trim(val, gitSpace))})
	}
	return out
}

// gitSpace is the white space git trims (its isspace): a vertical tab, a
// form feed or a no-break space is part of a value to git, so a value
// given one names another place.
const gitSpace = " \t\r\n"

// gitValue unquotes a config value as git does: double quotes removed,
// \" \\ \t \n \b unescaped, a # or ; outside quotes starting a comment.
// (package decide reads a config from the sandbox with git's own parser,
// and refuses what this reading and git's could disagree on.)
func gitValue(v string) string {
	var b []byte
	quoted, trim := false, -1
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case !quoted && strings.IndexByte(gitSpace, c) >= 0:
			// Trailing white space outside quotes is trimmed, quoted
			// white space kept, as git's parse_value does.
			if trim < 0 {
				trim = len(b)
			}
			if len(b) > 0 {
				b = append(b, ' ')
			}
			continue
		case !quoted && (c == '#' || c == ';'):
			i = len(v)
			continue
		}
		trim = -1
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 't':
				b = append(b, '\t')
			case 'n':
				b = append(b, '\n')
			case 'b':
				b = append(b, '\b')
			default:
				b = append(b, v[i])
			}
		default:
			b = append(b, c)
		}
	}
	if trim >= 0 {
		b = b[:trim]
	}
	return string(b)
}

// gitCodeTarget is a place a config entry names as code: a path, or a
// name to look up in PATH.
type gitCodeTarget struct {
	path   string
	lookup bool
}

// gitCodeTargets returns what the entry e names as code (see above).
func gitCodeTargets(e gitEntry) []gitCodeTarget {
	v := e.val
	if v == "" {
		return nil
	}
	if rest, ok := strings.CutPrefix(v, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil
		}
		v = home + "/" + rest
	}
	switch {
	case e.key == "core.hookspath":
		return []gitCodeTarget{{path: v}}
	case strings.HasPrefix(e.key, "alias.*.") || strings.HasPrefix(e.key, "alias."):
		cmd, ok := strings.CutPrefix(v, "!")
		if !ok {
			return nil
		}
		return programWord(cmd)
	case e.key == "core.fsmonitor":
		switch strings.ToLower(v) {
		case "true", "false", "yes", "no", "on", "off", "1", "0":
			return nil
		}
	case e.key == "submodule.*.update":
		// "!COMMAND" runs a command; checkout, rebase, merge and none do not.
		cmd, ok := strings.CutPrefix(v, "!")
		if !ok {
			return nil
		}
		return programWord(cmd)
	case e.key == "sendemail.smtpserver" && !filepath.IsAbs(v):
		return nil // a host name, not a program
	case e.key == "gpg.program" || strings.HasPrefix(e.key, "gpg.") && strings.HasSuffix(e.key, ".program"):
		return []gitCodeTarget{{path: v, lookup: !strings.Contains(v, "/")}}
	case e.key == "credential.helper" || e.key == "credential.*.helper":
		if cmd, ok := strings.CutPrefix(v, "!"); ok {
			return programWord(cmd)
		}
		if !filepath.IsAbs(v) {
			w := programWord(v)
			if len(w) == 1 && w[0].lookup {
				w[0].path = "git-credential-" + w[0].path
			}
			return w
		}
	case !gitProgramKeys[e.key] && !(strings.HasPrefix(e.key, "pager.") && !strings.Contains(e.key, "*")):
		return nil
	}
	return programWord(v)
}

// programWord is the program a shell command line starts: its first word,
// if that is a plain word (quotes removed).
func programWord(cmd string) []gitCodeTarget {
	cmd = strings.TrimLeft(cmd, " \t")
	var b strings.Builder
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|':
			i = len(cmd)
		case c == '\'' || c == '"':
			j := strings.IndexByte(cmd[i+1:], c)
			if j < 0 {
				return nil
			}
			b.WriteString(cmd[i+1 : i+1+j])
			i += j + 1
		case strings.IndexByte("$`(){}<>\\*?[", c) >= 0 || c == '=' && !strings.Contains(b.String(), "/"):
			return nil // not a plain word: an expansion, a subshell, an assignment
		default:
			b.WriteByte(c)
		}
	}
	w := b.String()
	if w == "" {
		return nil
	}
	return []gitCodeTarget{{path: w, lookup: !strings.Contains(w, "/")}}
}

// pathCandidates are the places a program name is taken from by a PATH
// lookup on the host: name in each absolute PATH directory up to and
// including the first that holds it.
func pathCandidates(name string) []string {
	var out []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := d + "/" + name
		out = append(out, p)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			break
		}
	}
	return out
}
