package spec

import (
	"os"
	"sort"
)

// DefaultPath is the PATH a sandboxed process gets when none is passed or set.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ProcessEnv builds the environment of a sandboxed process from sb.Env: the
// host variables named in Pass (when set on the host), then Set, which wins.
// PATH defaults to DefaultPath and HOME to /tmp (the sandbox's private
// tmpfs), because the host's home is not visible inside. The result is
// sorted, so it is deterministic.
func ProcessEnv(sb *Sandbox) []string { return ProcessEnvFrom(sb, os.LookupEnv) }

// ProcessEnvFrom is ProcessEnv with the host variables looked up by
// lookup: a warm session builds each exec's environment from the
// environment of the client that asked for it.
func ProcessEnvFrom(sb *Sandbox, lookup func(string) (string, bool)) []string {
	env := map[string]string{}
	for _, name := range sb.Env.Pass {
		if v, ok := lookup(name); ok {
			env[name] = v
		}
	}
	for k, v := range sb.Env.Set {
		env[k] = v
	}
	if _, ok := env["PATH"]; !ok {
		env["PATH"] = DefaultPath
	}
	if _, ok := env["HOME"]; !ok {
		env["HOME"] = "/tmp"
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
