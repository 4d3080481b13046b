// Package gitid carries the caller's git identity into a sandbox: it reads
// user.name and user.email, and nothing else, from the caller's global and
// system git configs, and writes a generated config holding just them,
// which the sandbox's git reads as its system config (GIT_CONFIG_SYSTEM):
// a repository's own user.email and the sandbox's own `git config
// --global` still win, and nothing that names code (core.hooksPath,
// alias.*, credential.helper, an include) is carried.
package gitid
