package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// DefaultProtect is the built-in protect list, relative to the root: a
// config's `protect` entries add to it, and `protect_defaults: false`
// leaves it out. Each entry is something a process can plant to
// run code outside the sandbox later, when a person or a tool trusts the
// workspace: git hooks and git config (core.hooksPath, aliases, filters),
// shell start-up files, direnv's .envrc, and the settings folders of editors
// and coding agents, which can declare commands or MCP servers to start.
var DefaultProtect = []string{
	".git/hooks",
	".git/config",
	// commondir and config.worktree redirect or extend .git/config (and
	// so core.fsmonitor, core.hooksPath, aliases); worktrees/ holds the
	// same files of linked worktrees.
	".git/commondir",
	".git/config.worktree",
	".git/worktrees",
	// The same files of every repository below the root (a nested
	// repository, a submodule checkout's gitdir), as patterns the runner's
	// broker holds for paths that appear mid-run too.
	"**/.git/hooks",
	"**/.git/config",
	"**/.git/commondir",
	"**/.git/config.worktree",
	"**/.git/modules/**/hooks",
	"**/.git/modules/**/config",
	"**/.git/modules/**/commondir",
	"**/.git/modules/**/config.worktree",
	"**/.git/worktrees/*/commondir",
	"**/.git/worktrees/*/config.worktree",
	// cordon's own project config: a command that could write it would
	// widen the next run that discovers it.
	"cordon.yaml",
	".bashrc",
	".bash_profile",
	".bash_login",
	".bash_logout",
	".profile",
	".zshrc",
	".zprofile",
	".zshenv",
	".zlogin",
	".envrc",
	// Editor settings that run commands when the folder is opened: VS Code
	// tasks with runOn folderOpen, terminal profiles, interpreter paths and
	// MCP servers (.vscode, and a workspace file anywhere, which VS Code
	// offers to open); JetBrains run configurations and startup tasks
	// (.idea); dev containers, whose initializeCommand runs on the host
	// (.devcontainer/, and .devcontainer.json at the root or in any folder
	// opened on its own); Zed's and Helix's language servers, context
	// servers and tasks; Neovim's and Vim's exrc files.
	".vscode",
	"**/*.code-workspace",
	".idea",
	".devcontainer",
	".devcontainer.json",
	"**/.devcontainer.json",
	".zed",
	".helix",
	".nvim.lua",
	".nvimrc",
	".exrc",
	// Coding agents' project settings, which declare hooks, plugins or MCP
	// servers that the agent starts on the host by itself: Claude Code,
	// Cursor, Codex, Gemini CLI (and its fork Qwen Code), the shared
	// .mcp.json, opencode (its config, and plugins under .opencode/ that it
	// loads at start), Amazon Q, Kiro, Continue, Windsurf (hooks),
	// Cline (.clinerules/hooks, .cline), Roo Code and Kilo Code (mcp.json),
	// Crush, aider (lint-cmd and test-cmd run after each edit), and GitHub
	// Copilot CLI (.github/hooks).
	".claude",
	".cursor",
	".codex",
	".gemini",
	".qwen",
	".mcp.json",
	"opencode.json",
	"opencode.jsonc",
	".opencode",
	".amazonq",
	".kiro",
	".continue",
	".windsurf",
	".clinerules",
	".cline",
	".roo",
	".kilocode",
	"crush.json",
	".crush.json",
	".crush",
	".aider.conf.yml",
	".github/hooks",
	// Git hook managers: the hook git runs on the host's next commit reads
	// its commands from these (pre-commit, husky, lefthook).
	".pre-commit-config.yaml",
	".husky",
	"lefthook.yml",
	".lefthook.yml",
	"lefthook-local.yml",
	".lefthook-local.yml",
	// mise runs a config's hooks (enter, cd) and env scripts when a shell
	// with mise activate enters the folder, and trusts a config by its path,
	// not by its content.
	"mise.toml",
	".mise.toml",
	"mise.local.toml",
	".mise.local.toml",
	".mise",
	".config/mise",
	".config/mise.toml",
}

// profileNames are the built-in profiles in the order they are documented.
var profileNames = []string{"workspace", "readonly", "network", "strict"}

// ProfileNames returns the names of the built-in profiles.
func ProfileNames() []string { return append([]string(nil), profileNames...) }

// StrictTimeout is the timeout of the strict profile.
const StrictTimeout = 30 * time.Second

// Profile returns a built-in config rooted at cwd ("" means the current
// directory):
//
//   - workspace: cwd read-write, the host system read-only, no network; the
//     config used when none is given.
//   - readonly: workspace, with cwd read-only.
//   - network: workspace, with the network on.
//   - strict: workspace with `system: none`, the runtime directories
//     (RuntimeDirs that exist) mounted read-only at their own paths, no
//     caches and no toolchains, and a 30s timeout.
//
// All but strict keep the package caches (CacheNames) and mount the
// caller's toolchains (see AddHostTools).
//
// Every profile protects DefaultProtect and requires the OS sandbox.
func Profile(name, cwd string) (*Config, error) {
	known := false
	for _, n := range profileNames {
		known = known || n == name
	}
	if !known {
		return nil, &FieldError{Field: "profile", Problem: fmt.Sprintf("unknown profile %q", name), Fix: "use one of: " + strings.Join(profileNames, ", ")}
	}
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("%w: profile %s: cannot get the current directory: %w", ErrInvalidConfig, name, err)
		}
		cwd = wd
	}
	wd, err := filepath.Abs(cwd)
	if err != nil {
		return nil, fmt.Errorf("%w: profile %s: %w", ErrInvalidConfig, name, err)
	}
	root, prob := hostPath(wd, "/")
	if prob == "" {
		prob = placementProblem(root)
	}
	if prob == "" {
		prob = dirProblem(root)
	}
	if prob != "" {
		return nil, &FieldError{Field: "profile " + name, Problem: "the workspace " + prob, Fix: "run cordon from a project directory"}
	}
	cfg := &Config{
		AuditRequired: true,
		Sandbox: Sandbox{
			Root:             root,
			Protect:          joinAll(root, DefaultProtect),
			System:           System{Kind: SystemHost},
			Env:              Env{Pass: append([]string(nil), DefaultEnvPass...)},
			Caches:           slices.Clone(CacheNames),
			Toolchains:       true,
			RequireOSSandbox: true,
		},
		Delegation: Delegation{MaxDepth: DefaultMaxDepth},
		Session:    DefaultSession(),
		Source:     "profile:" + name,
	}
	sb := &cfg.Sandbox
	switch name {
	case "readonly":
		sb.Readonly = true
	case "network":
		sb.Network = Network{Enabled: true}
	case "strict":
		sb.System = System{Kind: SystemNone}
		sb.Caches, sb.Toolchains = nil, false
		sb.Limits.Timeout = StrictTimeout
		sb.NoGitIdentity = true
		for _, dir := range ExistingDirs(RuntimeDirs) {
			sb.Mounts = append(sb.Mounts, Mount{Source: dir, Target: dir, Readonly: true})
		}
	}
	d := newDecoder()
	validateSandbox(sb, d)
	if err := d.result("profile", name); err != nil {
		return nil, err
	}
	return cfg, nil
}
