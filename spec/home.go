package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HomeProtect lists, relative to a home directory, the files that run code
// or send credentials somewhere when the user next logs in, opens a shell,
// starts an editor or runs a tool. A writable workspace or mount that is a
// home directory, or holds one, is refused unless the config sets
// sandbox.allow_home_workspace; with it, these are protected below every
// such home, whatever the protect list says. DefaultProtect covers the
// same home's editor and agent folders (.vscode, .claude, …) only when it
// applies at that directory, so the home-level ones are listed here too.
var HomeProtect = []string{
	// Shell start-up: run by every login or interactive shell. Debian's
	// and Ubuntu's stock .bashrc sources .bash_aliases; Fedora's sources
	// .bashrc.d/*; Oh My Zsh sources its custom folder; readline's macros
	// can retype a command line when a key is pressed.
	".bashrc", ".bashrc.d", ".bash_aliases", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".oh-my-zsh",
	".config/fish", ".inputrc",
	// Commands on PATH before the system's (Debian's .profile puts them
	// first), and the desktop entries and MIME choices that pick the
	// program a file opens with.
	".local/bin", ".local/share/applications", ".config/mimeapps.list",
	// Started with the session: XDG autostart, systemd user units and
	// their environment (LD_PRELOAD), PAM's and X's start-up files.
	".config/autostart", ".config/systemd/user", ".config/environment.d",
	".pam_environment", ".xprofile", ".xsessionrc", ".xinitrc",
	// git's global config and attributes (hooksPath, fsmonitor, pager,
	// aliases, filters, credential helpers).
	".gitconfig", ".config/git",
	// ssh: config (ProxyCommand, LocalCommand, where a host name really
	// goes), authorized_keys (who may log in), rc (run at each login).
	".ssh",
	// Tools that run a configured program or send a stored credential to
	// a configured place: npm (node-options, script-shell), pip and PyPI
	// uploads (index and repository URLs), Docker (credential helpers, CLI
	// plugins), GnuPG (pinentry-program), the AWS CLI (credential_process),
	// kubectl (exec credential plugins), cargo (runners, the bin folder on
	// PATH).
	".npmrc", ".pypirc", ".pip", ".config/pip", ".docker", ".gnupg", ".aws", ".kube",
	".cargo/bin", ".cargo/config", ".cargo/config.toml",
	// Editors' user settings, plugins and extensions, loaded at start.
	".vimrc", ".vim", ".config/nvim", ".emacs", ".emacs.d", ".config/emacs",
	".tmux.conf", ".config/tmux", ".config/Code/User", ".vscode", ".vscode-server",
	".config/zed", ".config/helix",
	// Coding agents' user settings: hooks and MCP servers for every project.
	".claude", ".claude.json", ".codex", ".gemini", ".cursor", ".copilot",
	".config/opencode", ".codeium", ".aider.conf.yml", ".continue", ".amazonq", ".kiro",
	// Found by the second hostile review of issue 21, and their kin: what
	// an interpreter, a debugger or a build tool loads at its start from
	// the home: Python's user site (a .pth line runs at every start) and
	// start-up files, bash-completion's user file, Gradle's init scripts,
	// Maven's settings (mirrors, credentials), Neovim's and Vim's data
	// folders on the runtimepath, gdb, psql, irb, R, IPython, Mercurial,
	// direnv's rc, and the user's systemd and cron-less timers above.
	".local/lib", ".local/share/nvim", ".local/share/vim", ".pythonrc", ".pythonrc.py",
	".bash_completion", ".bash_completion.d", ".local/share/bash-completion",
	".gradle/init.d", ".gradle/init.gradle", ".gradle/gradle.properties", ".m2/settings.xml",
	".gdbinit", ".config/gdb", ".psqlrc", ".irbrc", ".pryrc", ".Rprofile", ".ipython", ".hgrc",
	".direnvrc", ".config/direnv", ".wgetrc", ".curlrc", ".netrc",
}

// homeParents are the directories whose entries are home directories.
var homeParents = []string{"/home", "/Users"}

// loginFiles and loginDirs: a directory that holds one of each is a home
// directory, wherever it is.
var (
	loginFiles = []string{".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin"}
	loginDirs  = []string{".ssh", ".config"}
)

// homeMatch is one home directory that a directory is or holds: rel is its
// path below the directory ("." for the directory itself; a "*" component
// stands for every entry of a folder of homes, as /home).
type homeMatch struct {
	rel, what string
}

// homesIn reports the home directories that the host directory dir is or
// holds, as the kernel resolves both: the caller's $HOME, /root, an entry
// of /home or /Users, or a directory with login files (.bashrc or .profile,
// and .ssh or .config). A bind mount of one elsewhere is found by its
// device and inode.
func homesIn(dir string) []homeMatch {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil // the field's own checks say why
	}
	var out []homeMatch
	add := func(m homeMatch) {
		if !slices.ContainsFunc(out, func(o homeMatch) bool { return o.rel == m.rel }) {
			out = append(out, m)
		}
	}
	// holds reports the path of home below dir, if dir is it or one of
	// its ancestors.
	holds := func(home string) (string, bool) {
		real, err := filepath.EvalSymlinks(home)
		if err != nil {
			return "", false
		}
		for a := real; ; a = filepath.Dir(a) {
			if ai, err := os.Stat(a); err == nil && os.SameFile(fi, ai) {
				rel, err := filepath.Rel(a, real)
				return rel, err == nil
			}
			if a == "/" {
				return "", false
			}
		}
	}
	if h := os.Getenv("HOME"); filepath.IsAbs(h) && filepath.Clean(h) != "/" {
		if rel, ok := holds(h); ok {
			add(homeMatch{rel, "the home directory of the user running cordon ($HOME)"})
		}
	}
	if rel, ok := holds("/root"); ok {
		add(homeMatch{rel, "root's home directory /root"})
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		for _, p := range homeParents {
			if filepath.Dir(real) == p {
				add(homeMatch{".", "a home directory (an entry of " + p + ")"})
			}
			if rel, ok := holds(p); ok {
				add(homeMatch{filepath.Join(rel, "*"), "the home directories in " + p})
			}
		}
	}
	if hasAny(dir, loginFiles) && hasAny(dir, loginDirs) {
		add(homeMatch{".", "a home directory (it holds login files: a shell start-up file and .ssh or .config)"})
	}
	return out
}

// startupBelow returns, relative to dir, the HomeProtect entries that lie
// strictly inside dir when dir lies below a home directory ($HOME, /root,
// an entry of /home or /Users; ~/.config holds .config/git), as the kernel
// resolves the paths.
func startupBelow(dir string) []string {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	var homes []string
	if h := os.Getenv("HOME"); filepath.IsAbs(h) && filepath.Clean(h) != "/" {
		if rh, err := filepath.EvalSymlinks(h); err == nil {
			homes = append(homes, rh)
		}
	}
	homes = append(homes, "/root")
	for _, p := range homeParents {
		if rest, ok := strings.CutPrefix(real, p+"/"); ok {
			homes = append(homes, filepath.Join(p, strings.SplitN(rest, "/", 2)[0]))
		}
	}
	var out []string
	for _, h := range homes {
		sub, ok := strings.CutPrefix(real, h+"/")
		if !ok {
			continue
		}
		for _, f := range HomeProtect {
			if rel, ok := strings.CutPrefix(f, sub+"/"); ok && !slices.Contains(out, rel) {
				out = append(out, rel)
			}
		}
	}
	return out
}

// hasAny reports whether dir has an entry of one of the names.
func hasAny(dir string, names []string) bool {
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// guardHomes refuses, through d, a writable workspace or mount that is or
// holds a home directory, unless sb.AllowHomeWorkspace; with it, it adds
// HomeProtect below each such home to sb.Protect. A writable place below
// a home (a mount of ~/.config) gets the entries that lie inside it, with
// no opt-in needed.
func guardHomes(sb *Sandbox, d *decoder) {
	type place struct{ field, host, target string }
	var places []place
	if sb.Root != "" && !sb.Readonly {
		places = append(places, place{"sandbox.root", sb.Root, sb.Root})
	}
	for i, m := range sb.Mounts {
		if !m.Readonly && m.Source != "" && m.Target != "" {
			places = append(places, place{index("sandbox.mounts", i) + ".source", m.Source, m.Target})
		}
	}
	protect := func(e string) {
		if !slices.Contains(sb.Protect, e) {
			sb.Protect = append(sb.Protect, e)
		}
	}
	for _, p := range places {
		for _, rel := range startupBelow(p.host) {
			protect(filepath.Join(p.target, rel))
		}
		for _, h := range homesIn(p.host) {
			if !sb.AllowHomeWorkspace {
				is := "is"
				if h.rel != "." {
					is = "holds"
				}
				d.fail(p.field, d.line(p.field), fmt.Sprintf("%s %s %s, whose start-up files (.bashrc, .gitconfig, .ssh, …) the sandbox could rewrite", p.host, is, h.what),
					"use a project directory below it as the workspace, make it read-only, or set allow_home_workspace: true under sandbox in a cordon.yaml (its start-up files are then protected)")
				continue
			}
			for _, f := range HomeProtect {
				protect(filepath.Join(p.target, h.rel, f))
			}
		}
	}
}

// GuardHome checks a sandbox built in code as Load and Parse check a
// config: a writable workspace or mount that is or holds a home directory
// is refused unless sb.AllowHomeWorkspace, and with it sb.Protect gains
// HomeProtect below each such home. It is idempotent; the error matches
// ErrInvalidConfig and names the field and the opt-in.
func GuardHome(sb *Sandbox) error {
	d := newDecoder()
	guardHomes(sb, d)
	return d.result("sandbox", strings.TrimSpace(sb.Root))
}
