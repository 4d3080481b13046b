package decide

import (
	"fmt"
	"path"
	"strings"
)

// Two things the sandbox writes send the host's git to a place: a ".git"
// file ("gitdir: PATH", which git submodule and clone --separate-git-dir
// write) names the directory git takes its hooks and config from, and a
// config's core.worktree names the directory git checks files out to.
// Both are decided where the kernel takes them, never where a lexical
// clean would ("a/lnk/.." is the parent of lnk's target, not a): the
// writer resolves the path in the sandbox's view (Rules.Resolve: the
// broker with openat2 and RESOLVE_IN_ROOT, the file tools with their
// walk) and the verdict is made here, the same for every writer.
//
// git writes both as real paths (it computes them from realpath), with
// their ".." first: so a path with ".." after a name, or one that goes
// through a symlink, is no git of the host's making, and a link on it
// could be turned elsewhere after the check. Both are refused.

// Resolved is where a writer's resolution of a sandbox path leads.
type Resolved struct {
	// Path is the sandbox path reached, every symlink followed and ".."
	// applied after it, as the kernel does in the sandbox's root.
	Path string
	// Missing is how many of Path's last names do not exist yet (0: all
	// of it exists).
	Missing int
}

// Resolver resolves an absolute sandbox path, not cleaned first, as the
// kernel does in the sandbox's root. It fails when the kernel would (".."
// after a missing name or a file, a loop) or when the writer cannot tell
// (a dangling symlink at the first missing name may be refused so).
type Resolver func(p string) (Resolved, error)

// MaxGitFile is the longest ".git" file a redirect is decided on; a
// longer one is refused.
const MaxGitFile = 4096

// RedirectPlace reports whether a symlink at the sandbox path p could
// send git elsewhere: a ".git" name, or a place at or below a ".git"
// directory's modules or worktrees (whose entries are gitdirs). No writer
// makes one there (the broker refuses it, but for git's own probe of the
// file system, which stays below them; the file tools make no symlinks),
// so a gitdir that does not exist yet there can still mean only one place.
func RedirectPlace(p string) bool {
	if path.Base(p) == ".git" {
		return true
	}
	for _, d := range []string{"/.git/modules", "/.git/worktrees"} {
		if strings.HasSuffix(p, d) || strings.Contains(p, d+"/") {
			return true
		}
	}
	return false
}

// GitFile decides the content data of the ".git" file at the sandbox
// path p (resolved: no symlink on it): content that is no redirect is
// taken (git refuses it); a redirect ("gitdir: DIR") only to a directory
// whose hooks, config and commondir a rule guards (r.Refuse: a
// submodule's gitdir in .git/modules, a linked worktree's in
// .git/worktrees), resolved by r.Resolve as the kernel does. A gitdir
// that does not exist yet (git submodule add writes the file first) is
// taken only where no symlink can appear on its missing part. A name
// other than ".git" is no redirect.
func GitFile(r Rules, p string, data []byte) error {
	const pre = "gitdir: "
	if path.Base(p) != ".git" || !strings.HasPrefix(string(data), pre) {
		return nil
	}
	if len(data) > MaxGitFile {
		return fmt.Errorf("a gitdir line longer than %d bytes", MaxGitFile)
	}
	// git strips only the line ends: the path is the rest, spaces and all.
	target := strings.TrimRight(string(data[len(pre):]), "\r\n")
	if target == "" || strings.ContainsAny(target, "\n\x00") {
		return fmt.Errorf("a gitdir that is not one path: give one line, \"gitdir: PATH\"")
	}
	if dotDotAfterName(target) {
		return fmt.Errorf("a gitdir with \"..\" after a name (%s): git never writes one, and where it leads can change", target)
	}
	if !strings.HasPrefix(target, "/") {
		target = path.Dir(p) + "/" + target
	}
	if r.Resolve == nil {
		return fmt.Errorf("its gitdir %s cannot be resolved in the sandbox by this writer", target)
	}
	g, err := r.Resolve(target)
	if err != nil {
		return fmt.Errorf("its gitdir %s does not resolve: %w", target, err)
	}
	if !symlinkFree(target, g.Path) {
		return fmt.Errorf("its gitdir %s goes through a symlink to %s: git writes real paths, and a link could be turned elsewhere later", target, g.Path)
	}
	if q := r.linkable(g); q != "" {
		return fmt.Errorf("its gitdir %s does not exist yet, and %s could still become a symlink: only a place below a .git directory's modules or worktrees, or a protected one, cannot", g.Path, q)
	}
	for _, f := range []string{"hooks", "config", "commondir"} {
		if r.refuse(g.Path+"/"+f) == "" {
			return fmt.Errorf("it points git at %s, whose %s no deny or protect rule guards: the sandbox could plant code there for the host's git; point it at a submodule's .git/modules/NAME or a worktree's .git/worktrees/NAME", g.Path, f)
		}
	}
	return nil
}

// linkable returns the first missing place on g where a symlink could
// still appear, or "".
func (r Rules) linkable(g Resolved) string {
	comps := strings.Split(g.Path, "/")
	if g.Missing < 0 || g.Missing >= len(comps) {
		return g.Path
	}
	for i := len(comps) - g.Missing; i < len(comps); i++ {
		q := strings.Join(comps[:i+1], "/")
		if !RedirectPlace(q) && r.refuse(q) == "" {
			return q
		}
	}
	return ""
}

// Worktree decides a core.worktree val in the config at the sandbox path
// cfg (git submodule writes one into a submodule's gitdir,
// .git/modules/NAME/config): only inside the checkout that holds cfg's
// first ".git" directory, and never in a ".git" there; otherwise the
// host's next checkout in that repository would write its files
// elsewhere (into a hooks directory, or outside the workspace). It is
// decided where git takes it: git changes into the config's directory and
// then into the value, so the value is resolved from there by resolve
// (nil refuses every value). It must exist: a symlink made later at a
// missing name would move it.
func Worktree(val, cfg string, resolve Resolver) error {
	_, err := worktreeAt(val, cfg, resolve)
	return err
}

// worktreeAt is Worktree, which returns where val leads.
func worktreeAt(val, cfg string, resolve Resolver) (Resolved, error) {
	i := strings.Index(cfg, "/.git/")
	switch {
	case i < 0:
		return Resolved{}, fmt.Errorf("a core.worktree in %s, a config outside a .git directory: set it with git in the sandbox", cfg)
	case val == "" || strings.ContainsAny(val, "\x00\n"):
		return Resolved{}, fmt.Errorf("a core.worktree that is not one path")
	case dotDotAfterName(val):
		return Resolved{}, fmt.Errorf("core.worktree %s has \"..\" after a name: git never writes one, and where it leads can change", val)
	case resolve == nil:
		return Resolved{}, fmt.Errorf("core.worktree %s cannot be resolved in the sandbox by this writer", val)
	}
	top := cfg[:i]
	if top == "" {
		top = "/"
	}
	w := val
	if !strings.HasPrefix(w, "/") {
		w = path.Dir(cfg) + "/" + w
	}
	got, err := resolve(w)
	switch {
	case err != nil:
		return Resolved{}, fmt.Errorf("core.worktree %s does not resolve: %w", val, err)
	case !symlinkFree(w, got.Path):
		return Resolved{}, fmt.Errorf("core.worktree %s goes through a symlink to %s: git writes real paths, and a link could be turned elsewhere later", val, got.Path)
	case got.Missing != 0:
		return Resolved{}, fmt.Errorf("core.worktree %s is %s, which does not exist: a symlink made there later would send git's checkout elsewhere; make the directory first", val, got.Path)
	}
	rest, ok := strings.CutPrefix(got.Path, strings.TrimSuffix(top, "/")+"/")
	if got.Path == top {
		rest, ok = "", true
	}
	if !ok {
		return Resolved{}, fmt.Errorf("core.worktree %s is %s, outside %s, the checkout the repository belongs to", val, got.Path, top)
	}
	for _, part := range strings.Split(rest, "/") {
		if part == ".git" {
			return Resolved{}, fmt.Errorf("core.worktree %s is %s, in a .git directory, where git's checkout would write over its own files", val, got.Path)
		}
	}
	return got, nil
}

// worktreeIn is Worktree with r's rules: besides, the directory must be
// no guarded place (the host's checkout there would write into a
// protected hooks path or editor settings), and a submodule's, in
// .git/modules/NAME/config, not the superproject's checkout itself (git
// submodule never writes that; the host's next submodule update would
// write the submodule's files over the superproject's).
func worktreeIn(r Rules, val, cfg string) error {
	got, err := worktreeAt(val, cfg, r.Resolve)
	if err != nil {
		return err
	}
	if rule := r.refuse(got.Path); rule != "" {
		return fmt.Errorf("core.worktree %s is %s, which %s guards: the host's checkout would write there", val, got.Path, rule)
	}
	if i := strings.Index(cfg, "/.git/modules/"); i >= 0 && (got.Path == cfg[:i] || cfg[:i] == "" && got.Path == "/") {
		return fmt.Errorf("core.worktree %s is %s, the superproject's own checkout: a submodule's is its own directory in it", val, got.Path)
	}
	return nil
}

// dotDotAfterName reports whether the path p has ".." after a name
// ("a/.."): git never writes one in a gitdir line or core.worktree (its
// relative paths climb first, then descend), and a name there could
// become a symlink after the check, which would change where ".." leads.
func dotDotAfterName(p string) bool {
	named := false
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if named {
				return true
			}
		default:
			named = true
		}
	}
	return false
}

// symlinkFree reports whether the absolute path p, with no ".." after a
// name, reached resolved without following a symlink: its leading ".."
// climb real directories, so its lexical form is then where it leads.
func symlinkFree(p, resolved string) bool {
	return path.Clean(p) == resolved
}
