package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CacheNames are the package caches a sandbox can keep from one run to the
// next (config key caches), in the order they are listed.
var CacheNames = []string{"go", "npm", "pip", "cargo", "yarn", "pnpm"}

// CacheTarget is the sandbox folder the caches are mounted under: cache
// NAME is CacheTarget/NAME, read-write.
const CacheTarget = "/cordon/cache"

// cacheEnv is, per cache, the variables that point its tool at the cache:
// each is set to CacheTarget/NAME/SUB ("" for the cache folder itself).
var cacheEnv = map[string][][2]string{
	"go":    {{"GOCACHE", "build"}, {"GOMODCACHE", "mod"}},
	"npm":   {{"npm_config_cache", ""}},
	"pip":   {{"PIP_CACHE_DIR", ""}},
	"cargo": {{"CARGO_HOME", ""}},
	"yarn":  {{"YARN_CACHE_FOLDER", ""}},
	"pnpm":  {{"npm_config_store_dir", ""}},
}

// CacheEnv returns the variables cache name sets in a sandbox, as
// NAME=VALUE, sorted; nil for an unknown cache.
func CacheEnv(name string) []string {
	var out []string
	for _, v := range cacheEnv[name] {
		out = append(out, v[0]+"="+filepath.Join(CacheTarget, name, v[1]))
	}
	slices.Sort(out)
	return out
}

// CAVariables are the variables that name a CA certificate file or folder
// (a TLS-inspecting proxy's root): OpenSSL and Go, Node, Python's requests,
// curl, git, pip, cargo, the AWS CLI and Nix read them. They are passed by
// default (DefaultEnvPass), and the file or folder each names is mounted
// read-only when the sandbox does not show it (AddHostTools).
var CAVariables = []string{
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
	"CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "PIP_CERT",
	"CARGO_HTTP_CAINFO", "AWS_CA_BUNDLE", "NIX_SSL_CERT_FILE",
}

// HostTools are the facts of the caller's host that AddHostTools reads.
type HostTools struct {
	// CacheDir is the per-user folder that holds one folder per cache
	// (each existing already); "" adds no cache.
	CacheDir string
	// Home is the caller's $HOME; "" adds no toolchain.
	Home string
	// Lookup reads the caller's environment.
	Lookup func(string) (string, bool)
	// SamePaths mounts everything at its host path: for a backend that
	// cannot remap paths (Seatbelt), a cache is at its host folder, not
	// CacheTarget, and a toolchain or CA file at its resolved path.
	SamePaths bool
}

// AddHostTools adds to a top-level sandbox what the caller's host offers it
// beyond the config, as read-only or private mounts and variables that a
// config's env.set still overrides:
//
//   - sb.Caches: each cache's folder below h.CacheDir, read-write at
//     CacheTarget/NAME, with its variables (CacheEnv); with every cache,
//     h.CacheDir itself at CacheTarget. Never the host's own caches.
//   - sb.Toolchains: the toolchain roots that the PATH the sandbox gets
//     reaches below h.Home, read-only at their own paths, with the
//     variables they need (PYENV_ROOT, RUSTUP_HOME, NVM_DIR, …); never the
//     home itself.
//   - the files and folders the passed CAVariables name, read-only.
//
// A path the sandbox shows already is not mounted again; a denied one is
// never mounted. It is idempotent, and a sandbox with a Lineage (a
// worker's) gets nothing: it has what its parent passed it.
func AddHostTools(sb *Sandbox, h HostTools) {
	if len(sb.Lineage) > 0 {
		return
	}
	if h.Lookup == nil {
		h.Lookup = func(string) (string, bool) { return "", false }
	}
	if h.CacheDir != "" && allCaches(sb.Caches) {
		// Every cache: one mount of their folder, not one a cache (each
		// mount is compared with every deny and protect entry at start).
		target := CacheTarget
		if h.SamePaths {
			target = h.CacheDir
		}
		if addMount(sb, Mount{Source: h.CacheDir, Target: target, Cache: true}) {
			for _, name := range sb.Caches {
				for _, v := range cacheEnv[name] {
					setEnv(sb, v[0], filepath.Join(target, name, v[1]))
				}
			}
		}
	} else if h.CacheDir != "" {
		for _, name := range sb.Caches {
			src := filepath.Join(h.CacheDir, name)
			if fi, err := os.Lstat(src); err != nil || !fi.IsDir() {
				continue
			}
			target := filepath.Join(CacheTarget, name)
			if h.SamePaths {
				target = src
			}
			if addMount(sb, Mount{Source: src, Target: target, Cache: true}) {
				for _, v := range cacheEnv[name] {
					setEnv(sb, v[0], filepath.Join(target, v[1]))
				}
			}
		}
	}
	if sb.Toolchains && h.Home != "" {
		for _, tc := range Toolchains(sb, h.Home, h.Lookup) {
			if h.SamePaths {
				tc.Target = tc.Source
			}
			if addMount(sb, Mount{Source: tc.Source, Target: tc.Target, Readonly: true}) {
				for k, v := range tc.Env {
					setEnv(sb, k, v)
				}
			}
		}
	}
	for _, name := range CAVariables {
		if !slices.Contains(sb.Env.Pass, name) {
			continue
		}
		if _, set := sb.Env.Set[name]; set {
			continue
		}
		v, ok := h.Lookup(name)
		if !ok || !filepath.IsAbs(v) {
			continue
		}
		// Several paths (SSL_CERT_DIR is a list) are each mounted.
		for _, p := range filepath.SplitList(v) {
			if !filepath.IsAbs(p) {
				continue
			}
			if src, err := filepath.EvalSymlinks(p); err == nil && !holdsSecret(src) {
				target := filepath.Clean(p)
				if h.SamePaths {
					target = src
				}
				addMount(sb, Mount{Source: src, Target: target, Readonly: true})
			}
		}
	}
}

// allCaches reports whether names holds every cache of CacheNames.
func allCaches(names []string) bool {
	for _, n := range CacheNames {
		if !slices.Contains(names, n) {
			return false
		}
	}
	return true
}

// addMount appends m to sb unless the sandbox shows its target already
// (the workspace, a mount, a system directory), a deny rule covers its
// target or its source, or it can never be mounted there; it reports
// whether m is (now) in sb.
func addMount(sb *Sandbox, m Mount) bool {
	for _, o := range sb.Mounts {
		if o.Target == m.Target && o.Source == m.Source {
			return true
		}
	}
	if Shows(sb, m.Target) {
		return false
	}
	for _, d := range sb.Deny {
		if MatchUnder(d, m.Target) || MatchUnder(d, m.Source) {
			return false
		}
	}
	sb.Mounts = append(sb.Mounts, m)
	if prob, _ := MountPointProblem(sb, len(sb.Mounts)-1); prob != "" {
		sb.Mounts = sb.Mounts[:len(sb.Mounts)-1]
		return false
	}
	return true
}

// holdsSecret reports whether the host path p is, holds or lies in one of
// the host's secrets (HostSecrets), which a variable must not bring in.
func holdsSecret(p string) bool {
	for _, s := range HostSecrets() {
		if within(p, s) || within(s, p) {
			return true
		}
	}
	return false
}

// Shows reports whether the sandbox path p lies in the workspace, a mount
// or a system directory of sb, as a path (whether a deny rule hides it is
// another question).
func Shows(sb *Sandbox, p string) bool {
	if sb.Root != "" && within(p, sb.Root) {
		return true
	}
	for _, m := range sb.Mounts {
		if within(p, m.Target) {
			return true
		}
	}
	for _, d := range SystemDirs(sb) {
		if within(p, d) {
			return true
		}
	}
	return false
}

// setEnv sets name in sb.Env.Set unless the config set it.
func setEnv(sb *Sandbox, name, value string) {
	if _, ok := sb.Env.Set[name]; ok {
		return
	}
	set := make(map[string]string, len(sb.Env.Set)+1)
	for k, v := range sb.Env.Set {
		set[k] = v
	}
	set[name] = value
	sb.Env.Set = set
}

// Toolchain is one toolchain root below the caller's home that the
// sandbox's PATH reaches: mounted read-only at Target, with Env set.
type Toolchain struct {
	// Source is the host folder, resolved as the kernel resolves it.
	Source string
	// Target is the sandbox path: the folder as the caller's $HOME names it.
	Target string
	// Env are the variables the toolchain needs, sandbox paths.
	Env map[string]string
}

// toolchainRoot says, for a PATH entry below the home (as a path relative
// to it, matched with path.Match per component), which folder holds the
// toolchain and which variables name it. Only the folder PATH reaches is
// mounted for tools whose root holds credentials (~/.cargo: its
// credentials.toml) or much else (~/.local, ~/go's host module cache).
var toolchainRoots = []struct {
	entry, root string
	env         map[string]string
	// also is an extra folder mounted when it exists, with alsoEnv.
	also    string
	alsoEnv string
}{
	{entry: ".pyenv/shims", root: ".pyenv", env: map[string]string{"PYENV_ROOT": ".pyenv"}},
	{entry: ".pyenv/bin", root: ".pyenv", env: map[string]string{"PYENV_ROOT": ".pyenv"}},
	{entry: ".rbenv/shims", root: ".rbenv", env: map[string]string{"RBENV_ROOT": ".rbenv"}},
	{entry: ".rbenv/bin", root: ".rbenv", env: map[string]string{"RBENV_ROOT": ".rbenv"}},
	{entry: ".cargo/bin", root: ".cargo/bin", also: ".rustup", alsoEnv: "RUSTUP_HOME"},
	{entry: ".rustup/toolchains/*/bin", root: ".rustup", env: map[string]string{"RUSTUP_HOME": ".rustup"}},
	{entry: ".nvm/versions/node/*/bin", root: ".nvm", env: map[string]string{"NVM_DIR": ".nvm"}},
	{entry: ".volta/bin", root: ".volta", env: map[string]string{"VOLTA_HOME": ".volta"}},
	{entry: ".bun/bin", root: ".bun", env: map[string]string{"BUN_INSTALL": ".bun"}},
	{entry: ".deno/bin", root: ".deno", env: map[string]string{"DENO_INSTALL": ".deno"}},
	{entry: ".asdf/shims", root: ".asdf", env: map[string]string{"ASDF_DATA_DIR": ".asdf", "ASDF_DIR": ".asdf"}},
	{entry: ".asdf/bin", root: ".asdf", env: map[string]string{"ASDF_DATA_DIR": ".asdf", "ASDF_DIR": ".asdf"}},
	{entry: ".sdkman/candidates/*/*/bin", root: ".sdkman", env: map[string]string{"SDKMAN_DIR": ".sdkman"}},
	{entry: ".local/bin", root: ".local/bin"},
	{entry: "go/bin", root: "go/bin"},
}

// Toolchains returns the toolchain roots below home that the PATH sb's
// process gets (its env.set PATH, else the caller's when PATH is passed)
// reaches, each folder once: a known layout (~/.pyenv/shims is ~/.pyenv
// with PYENV_ROOT; ~/.cargo/bin, with ~/.rustup as RUSTUP_HOME), a bin
// folder whose parent holds lib/ (a prefix: conda, a Node or Go tarball)
// as that parent, else the PATH entry itself. Entries outside home, the
// home itself, and missing folders are left out.
func Toolchains(sb *Sandbox, home string, lookup func(string) (string, bool)) []Toolchain {
	pathVar, ok := sb.Env.Set["PATH"]
	if !ok {
		if !slices.Contains(sb.Env.Pass, "PATH") {
			return nil
		}
		if pathVar, ok = lookup("PATH"); !ok {
			return nil
		}
	}
	home = filepath.Clean(home)
	realHome, err := filepath.EvalSymlinks(home)
	if !filepath.IsAbs(home) || home == "/" || err != nil {
		return nil
	}
	var out []Toolchain
	for _, entry := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(entry) {
			continue
		}
		real, err := filepath.EvalSymlinks(entry)
		if err != nil {
			continue
		}
		rel, ok := strings.CutPrefix(real, realHome+"/")
		if !ok {
			continue
		}
		tc, ok := toolchainFor(rel, realHome, home)
		if !ok || slices.ContainsFunc(out, func(o Toolchain) bool { return o.Target == tc.Target }) {
			continue
		}
		out = append(out, tc)
		for _, e := range toolchainRoots {
			if e.also == "" || !matchRel(e.entry, rel) {
				continue
			}
			src := filepath.Join(realHome, e.also)
			if fi, err := os.Stat(src); err == nil && fi.IsDir() {
				out = append(out, Toolchain{Source: src, Target: filepath.Join(home, e.also), Env: map[string]string{e.alsoEnv: filepath.Join(home, e.also)}})
			}
		}
	}
	// Parents first: a root mounted after a folder inside it would cover
	// it, and AddHostTools leaves out what a mount shows already.
	slices.SortStableFunc(out, func(a, b Toolchain) int { return len(a.Target) - len(b.Target) })
	return out
}

// toolchainFor is the toolchain of the PATH entry rel below the home
// (realHome resolved, home as $HOME names it).
func toolchainFor(rel, realHome, home string) (Toolchain, bool) {
	for _, e := range toolchainRoots {
		// A PATH entry anywhere inside a known root (a pyenv plugin's
		// shims) is that root's too.
		inRoot := e.root != e.entry && !strings.Contains(e.root, "*") && within(rel, e.root)
		if !matchRel(e.entry, rel) && !inRoot {
			continue
		}
		root := e.root
		if strings.Contains(e.root, "*") {
			root = rel
		}
		env := map[string]string{}
		for k, v := range e.env {
			env[k] = filepath.Join(home, v)
		}
		return Toolchain{Source: filepath.Join(realHome, root), Target: filepath.Join(home, root), Env: env}, true
	}
	root := rel
	if filepath.Base(rel) == "bin" && filepath.Dir(rel) != "." {
		if fi, err := os.Stat(filepath.Join(realHome, filepath.Dir(rel), "lib")); err == nil && fi.IsDir() {
			root = filepath.Dir(rel)
		}
	}
	return Toolchain{Source: filepath.Join(realHome, root), Target: filepath.Join(home, root)}, true
}

// matchRel reports whether the relative path rel is the entry pattern
// (components matched one to one).
func matchRel(pattern, rel string) bool { return matchExact(comps(pattern), comps(rel)) }
