package spec

import (
	"os"
	"slices"
	"sort"
	"strings"
)

// DefaultPath is the PATH a sandboxed process gets when none is passed or set.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ProcessEnv builds the environment of a sandboxed process from sb.Env: the
// host variables named in Pass (when set on the host), then Set, which wins.
// PATH defaults to DefaultPath and HOME to /tmp (the sandbox's private
// tmpfs), because the host's home is not visible inside. The result is
// sorted, so it is deterministic.
//
// With a network allow list, the host's proxy variables (see ProxyVariable)
// are not passed: cordon enforces the list itself, and a proxy of the
// host's network is not one the sandbox can reach (its loopback is its
// own; another address only if the list allows it, and then it would relay
// past the list's per-host decisions). A proxy the config sets in Set is
// kept: its author chose it.
func ProcessEnv(sb *Sandbox) []string { return ProcessEnvFrom(sb, os.LookupEnv) }

// ProcessEnvFrom is ProcessEnv with the host variables looked up by
// lookup: a warm session builds each exec's environment from the
// environment of the client that asked for it.
func ProcessEnvFrom(sb *Sandbox, lookup func(string) (string, bool)) []string {
	env := map[string]string{}
	allowList := sb.Network.Enabled && len(sb.Network.Allow) > 0
	for _, name := range sb.Env.Pass {
		if allowList && ProxyVariable(name) {
			continue
		}
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

// proxyVariables are the variables programs read a proxy from (curl, git,
// pip, Go, Python, Node's undici with NODE_USE_ENV_PROXY), upper-cased.
var proxyVariables = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY"}

// ProxyVariable reports whether name is a proxy variable, in any case
// (http_proxy, HTTPS_PROXY, No_Proxy).
func ProxyVariable(name string) bool {
	return slices.Contains(proxyVariables, strings.ToUpper(name))
}
