package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// coveredBy reports whether one of the protect entries matches p or a
// directory above it, as the broker and the mounts decide.
func coveredBy(entries []string, p string) bool {
	return slices.ContainsFunc(entries, func(e string) bool { return MatchUnder(e, p) })
}

// TestDefaultProtectCommandFiles is the table of finding 6 of issue 21:
// every place where an editor, a coding agent or a git hook manager reads
// a command that it starts on the host by itself is protected by the
// default list, at the root and, for the files that are opened wherever
// they are, below it; project files a person reviews are not.
func TestDefaultProtectCommandFiles(t *testing.T) {
	root := "/w/proj"
	entries := joinAll(root, DefaultProtect)
	protected := []string{
		".devcontainer.json", "sub/app/.devcontainer.json", ".devcontainer/devcontainer.json",
		"proj.code-workspace", "tools/all.code-workspace",
		".vscode/tasks.json", ".vscode/mcp.json", ".idea/workspace.xml", ".idea/runConfigurations/x.xml",
		".zed/settings.json", ".helix/languages.toml", ".nvim.lua", ".nvimrc", ".exrc",
		".claude/settings.json", ".mcp.json", ".cursor/mcp.json", ".cursor/hooks.json", ".codex/config.toml",
		".gemini/settings.json", ".qwen/settings.json",
		"opencode.json", "opencode.jsonc", ".opencode/plugins/x.ts", ".opencode/opencode.jsonc",
		".amazonq/mcp.json", ".kiro/hooks/x.kiro.hook", ".kiro/settings/mcp.json", ".continue/config.yaml",
		".windsurf/hooks.json", ".clinerules/hooks/PreToolUse", ".cline/hooks/x", ".roo/mcp.json",
		".kilocode/mcp.json", "crush.json", ".crush.json", ".aider.conf.yml", ".github/hooks/hooks.json",
		".pre-commit-config.yaml", ".husky/pre-commit", "lefthook.yml", ".lefthook.yml", "lefthook-local.yml",
		"mise.toml", ".mise.toml", "mise.local.toml", ".mise/config.toml", ".config/mise/config.toml",
		".envrc", ".bashrc", ".git/hooks/pre-commit", "cordon.yaml",
	}
	for _, rel := range protected {
		if p := filepath.Join(root, rel); !coveredBy(entries, p) {
			t.Errorf("%s is writable with the default list", rel)
		}
	}
	// Files that name no command, or project files a person reviews:
	// .gitattributes names drivers only the (protected) config defines;
	// .tool-versions and .nvmrc name versions; a package's own folders
	// (node_modules/x/.vscode) are not opened by an editor.
	writable := []string{
		"Makefile", "package.json", "src/main.go", ".gitattributes", ".tool-versions", ".nvmrc",
		"node_modules/x/.vscode/settings.json", ".github/workflows/ci.yml", "CLAUDE.md", "AGENTS.md",
		"docs/opencode.json.md", "mise.toml.bak",
	}
	for _, rel := range writable {
		if p := filepath.Join(root, rel); coveredBy(entries, p) {
			t.Errorf("%s is protected by the default list; it names no command run on its own", rel)
		}
	}
}

// homeTree makes a directory with login files, as a home directory has.
func homeTree(t *testing.T, dir string) string {
	t.Helper()
	for _, d := range []string{".ssh", ".config", "proj"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".bashrc"), []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHomeWorkspaceRefused is the config half of finding 6: a writable
// workspace or mount that is a home directory ($HOME, through a symlink
// too; a directory with login files) or holds one ($HOME's parent) is
// refused, naming the field and the opt-in; a directory below the home, a
// read-only one, or the opt-in are accepted, and the opt-in protects the
// home's start-up files below the place that holds it.
func TestHomeWorkspaceRefused(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "users", "u")
	if err := os.MkdirAll(filepath.Join(home, "proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	dotfiles := homeTree(t, filepath.Join(base, "dotfiles"))
	link := filepath.Join(base, "link")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(base, "users")
	rows := []struct {
		name, yml string
		field     string // "" = accepted
		homeAt    string // with the opt-in: where the home's files are protected
	}{
		{"home", "root: " + home, "sandbox.root", ""},
		{"home through a symlink", "root: " + link, "sandbox.root", ""},
		{"holds home", "root: " + users, "sandbox.root", ""},
		{"login files", "root: " + dotfiles, "sandbox.root", ""},
		{"writable mount of home", "root: " + dotfiles + "/proj\n  mounts: [{source: " + home + "}]", "sandbox.mounts[0].source", ""},
		{"below home", "root: " + home + "/proj", "", ""},
		{"read-only home", "root: " + home + "\n  readonly: true", "", ""},
		{"read-only mount of home", "root: " + dotfiles + "/proj\n  mounts: [{source: " + home + ", readonly: true}]", "", ""},
		{"opt-in home", "root: " + home + "\n  allow_home_workspace: true", "", home},
		{"opt-in symlink", "root: " + link + "\n  allow_home_workspace: true", "", link},
		{"opt-in holds home", "root: " + users + "\n  allow_home_workspace: true", "", users + "/u"},
		{"opt-in login files", "root: " + dotfiles + "\n  allow_home_workspace: true", "", dotfiles},
		{"opt-in mount", "root: " + dotfiles + "/proj\n  allow_home_workspace: true\n  mounts: [{source: " + home + ", target: /h}]", "", "/h"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			cfg, err := Parse([]byte("sandbox:\n  "+row.yml+"\n"), base, "test.yaml")
			if row.field != "" {
				var fe *FieldError
				if err == nil || !errors.As(err, &fe) || fe.Field != row.field || !errors.Is(err, ErrInvalidConfig) ||
					!strings.Contains(err.Error(), "allow_home_workspace: true") {
					t.Fatalf("Parse: %v; want a refusal of %s naming allow_home_workspace", err, row.field)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if row.homeAt == "" {
				if coveredBy(cfg.Sandbox.Protect, filepath.Join(home, ".gitconfig")) {
					t.Fatalf("the home's files are protected without the opt-in: %v", cfg.Sandbox.Protect)
				}
				return
			}
			for _, f := range []string{".gitconfig", ".config/git/config", ".bash_aliases", ".bashrc.d/x.sh", ".ssh/config",
				".ssh/authorized_keys", ".config/fish/config.fish", ".config/autostart/x.desktop", ".config/systemd/user/x.service",
				".local/bin/ls", ".npmrc", ".docker/config.json", ".config/nvim/init.lua", ".claude.json"} {
				if !coveredBy(cfg.Sandbox.Protect, filepath.Join(row.homeAt, f)) {
					t.Errorf("%s is writable with allow_home_workspace", filepath.Join(row.homeAt, f))
				}
			}
			for _, f := range []string{"proj/main.go", ".cache/x", "notes.txt"} {
				if coveredBy(cfg.Sandbox.Protect, filepath.Join(row.homeAt, f)) {
					t.Errorf("%s is protected; only start-up files should be", filepath.Join(row.homeAt, f))
				}
			}
		})
	}
}

// TestHomeWorkspaceProfile: a profile run from the home directory (cordon
// run with no config there) is refused the same way, and so is a sandbox
// built in code (GuardHome, which cordon.NewProject's sandboxes pass
// through) until it opts in; GuardHome is idempotent.
func TestHomeWorkspaceProfile(t *testing.T) {
	home := homeTree(t, t.TempDir())
	t.Setenv("HOME", home)
	for _, name := range ProfileNames() {
		if _, err := Profile(name, home); name != "readonly" && (err == nil || !strings.Contains(err.Error(), "allow_home_workspace")) {
			t.Errorf("profile %s at $HOME: %v; want a refusal naming allow_home_workspace", name, err)
		} else if name == "readonly" && err != nil {
			t.Errorf("profile readonly at $HOME: %v; a read-only workspace plants nothing", err)
		}
	}
	if _, err := Profile("workspace", filepath.Join(home, "proj")); err != nil {
		t.Fatalf("profile below $HOME: %v", err)
	}
	sb := &Sandbox{Root: home, Protect: joinAll(home, DefaultProtect)}
	if err := GuardHome(sb); err == nil || !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("GuardHome: %v; want a refusal", err)
	}
	sb.AllowHomeWorkspace = true
	if err := GuardHome(sb); err != nil {
		t.Fatal(err)
	}
	n := len(sb.Protect)
	if err := GuardHome(sb); err != nil || len(sb.Protect) != n {
		t.Fatalf("GuardHome again: %v, %d entries, was %d", err, len(sb.Protect), n)
	}
	if !coveredBy(sb.Protect, home+"/.gitconfig") {
		t.Fatalf("protect: %v", sb.Protect)
	}
}

// TestHomeProtectEntriesValid: every entry is a clean relative path that
// the config would accept as a protect entry.
func TestHomeProtectEntriesValid(t *testing.T) {
	for _, list := range [][]string{HomeProtect, DefaultProtect} {
		seen := map[string]bool{}
		for _, e := range list {
			if seen[e] || filepath.IsAbs(e) || filepath.Clean(e) != e || patternProblem(filepath.Join("/w", e)) != "" {
				t.Errorf("entry %q: duplicate, absolute, unclean or a bad pattern", e)
			}
			seen[e] = true
		}
	}
	if _, err := Parse([]byte(fmt.Sprintf("sandbox: {protect: [%s]}", strings.Join(HomeProtect, ", "))), t.TempDir(), "t.yaml"); err != nil {
		t.Fatal(err)
	}
}

// TestHomeSubfolderMount: a writable mount of a folder inside the home
// (~/.config, ~/.local) needs no opt-in, and the start-up files inside it
// (git's config, autostart entries, ~/.local/bin) are protected at its
// target; the rest of it stays writable.
func TestHomeSubfolderMount(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "u")
	for _, d := range []string{".config", ".local/bin", "proj"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	yml := "sandbox:\n  root: " + home + "/proj\n  mounts: [{source: ~/.config, target: /cfg}, {source: ~/.local}, {source: ~/.config, target: /ro, readonly: true}]\n"
	cfg, err := Parse([]byte(yml), base, "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/cfg/git/config", "/cfg/autostart/x.desktop", "/cfg/systemd/user/x.service", "/cfg/fish/config.fish", home + "/.local/bin/git"} {
		if !coveredBy(cfg.Sandbox.Protect, p) {
			t.Errorf("%s is writable through the mount", p)
		}
	}
	for _, p := range []string{"/cfg/app/settings.json", home + "/.local/state/x", home + "/proj/main.go"} {
		if coveredBy(cfg.Sandbox.Protect, p) {
			t.Errorf("%s is protected; only start-up files should be", p)
		}
	}
}
