package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/cordon-run/cordon/mounts/decide"
)

// The file tools ask package decide what the Linux broker asks for the
// sandbox's processes, with their own inputs: their pattern decision
// (refuseChange), their uid, and their walk as the resolver of the paths
// git reads from what is written (a ".git" file's gitdir, a config's
// core.worktree), so that both writers give the same verdict.

// rules are the file tools' inputs to package decide.
func (t *Table) rules() decide.Rules {
	return decide.Rules{Refuse: t.refuseChange, UID: os.Geteuid(), Resolve: t.resolveGit}
}

// refuseChange is the tools' pattern decision on the sandbox path p, as
// the broker's policy answers it: "deny PATH" or "protect PATH", or "".
func (t *Table) refuseChange(p string) string {
	h := ""
	if e := t.lookup(p); e != nil {
		h = hostOf(e, p)
	}
	if m := matchUnder(p, t.denyS); m != "" {
		return "deny " + m
	}
	if m := matchUnder(h, t.denyH); h != "" && m != "" {
		return "deny " + m
	}
	if m := matchUnder(p, t.protectS); m != "" {
		return "protect " + m
	}
	if m := matchUnder(h, t.protectH); h != "" && m != "" {
		return "protect " + m
	}
	return ""
}

// resolveGit is the tools' decide.Resolver: the absolute sandbox path p
// resolved by the walk, as the kernel in the sandbox resolves it (every
// symbolic link followed and ".." applied after it, never cleaned first;
// ".." after a missing name or a file fails), with how many of its last
// names do not exist yet on the host's side.
func (t *Table) resolveGit(p string) (decide.Resolved, error) {
	r, err := t.walk("resolve", p, p, true)
	var pe *PathError
	if errors.As(err, &pe) {
		// Only the reason: decide's refusal names the path, and the
		// tool's error the writable places.
		if pe.Rule != "" && pe.Rule != RuleDeny {
			return decide.Resolved{}, fmt.Errorf("%w (%s)", pe.Err, pe.Rule)
		}
		return decide.Resolved{}, pe.Err
	}
	if err != nil {
		return decide.Resolved{}, err
	}
	out := decide.Resolved{Path: r.sandbox}
	for s, h := r.sandbox, r.host; s != "/" && s != r.e.Target; s, h = path.Dir(s), path.Dir(h) {
		_, err := os.Lstat(h)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return decide.Resolved{}, fmt.Errorf("%s: %w", s, err)
		}
		out.Missing++
	}
	return out, nil
}

// checkGitFile refuses what decide.GitFile refuses: a ".git" file whose
// redirect ("gitdir: DIR") points git at a directory whose hooks, config
// or commondir no deny or protect rule holds, as the Linux broker refuses
// it for the sandbox's processes.
func (t *Table) checkGitFile(op, p string, r resolution, content string) error {
	if err := decide.GitFile(t.rules(), r.sandbox, []byte(content)); err != nil {
		return &PathError{Op: op, Path: p, Err: ErrReadOnly, Rule: RuleProtect, Allowed: t.WritableRoots(),
			where: "a .git file from the sandbox: " + err.Error()}
	}
	return nil
}
