package cordon

import (
	"slices"

	"github.com/sirupsen/logrus"

	"github.com/cordon-run/cordon/internal/gitid"
	"github.com/cordon-run/cordon/spec"
)

// gitEnv are the variables that choose the configs git reads: a sandbox
// whose env sets or passes one keeps its author's choice, and gets no
// identity config.
var gitEnv = []string{"GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL"}

// systemGitConfig is the system config git reads when GIT_CONFIG_SYSTEM
// is not set; the identity config includes it, so that nothing of it is
// lost in the sandbox.
const systemGitConfig = "/etc/gitconfig"

// withGit gives a top-level sandbox what git needs out of the box: the
// mount of the main repository's .git when the workspace is a linked
// worktree or a submodule checkout (spec.GitDirMount), and the caller's
// git identity (gitid), shown read-only at its host path and read by the
// sandbox's git as its system config, so that the sandbox's own global
// config and a repository's user.email still win. A derived sandbox gets
// what its parent had, never more. known is the identity an earlier build
// of the same sandbox read (Override rebuilds it with a front end's flags),
// reused when it was read in the same directory: reading it runs git, a
// process start on every run.
func withGit(c *spec.Sandbox, known *readIdentity) (gitAdded, error) {
	var added gitAdded
	if len(c.Lineage) > 0 {
		return added, nil
	}
	m, ok, err := spec.GitDirMount(c)
	if err != nil {
		return added, err
	}
	if ok {
		c.Mounts = append(c.Mounts, m)
		added.mounts = append(added.mounts, m)
	}
	if c.NoGitIdentity || namesGitConfig(c.Env) {
		return added, nil
	}
	dir := c.Root
	if dir == "" {
		dir = "/"
	}
	var id gitid.Identity
	if known != nil && known.dir == dir {
		id = known.id
	} else {
		id = gitid.Read(dir)
	}
	added.read = &readIdentity{dir: dir, id: id}
	if id == (gitid.Identity{}) {
		return added, nil
	}
	data, err := gitid.Config(id, systemGitConfig)
	if err == nil {
		var file string
		if file, err = gitid.File(data); err == nil {
			m := spec.Mount{Source: file, Target: file, Readonly: true}
			c.Mounts = append(c.Mounts, m)
			if c.Env.Set == nil {
				c.Env.Set = map[string]string{}
			}
			c.Env.Set["GIT_CONFIG_SYSTEM"] = file
			added.mounts, added.env = append(added.mounts, m), file
			return added, nil
		}
	}
	// The identity is a convenience: a run goes on without it.
	logrus.WithError(err).Warn("git identity not carried into the sandbox")
	return added, nil
}

// gitAdded is what withGit added to a sandbox: mounts, and the value it
// set GIT_CONFIG_SYSTEM to ("" for none).
type gitAdded struct {
	mounts []spec.Mount
	env    string
	// read is the identity read and where (nil when none was read).
	read *readIdentity
}

// readIdentity is the caller's git identity as gitid.Read gave it in dir.
type readIdentity struct {
	dir string
	id  gitid.Identity
}

// without returns a copy of sb without what g added.
func (g gitAdded) without(sb *spec.Sandbox) *spec.Sandbox {
	c := sb.Clone()
	if len(g.mounts) > 0 {
		c.Mounts = slices.DeleteFunc(c.Mounts, func(m spec.Mount) bool {
			return slices.ContainsFunc(g.mounts, func(a spec.Mount) bool {
				return a.Source == m.Source && a.Target == m.Target && a.Readonly == m.Readonly && a.Name == "" && m.Name == ""
			})
		})
	}
	if g.env != "" && c.Env.Set["GIT_CONFIG_SYSTEM"] == g.env {
		delete(c.Env.Set, "GIT_CONFIG_SYSTEM")
	}
	return c
}

func namesGitConfig(e spec.Env) bool {
	for _, n := range gitEnv {
		if _, set := e.Set[n]; set {
			return true
		}
		for _, p := range e.Pass {
			if p == n {
				return true
			}
		}
	}
	return false
}
