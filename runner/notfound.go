package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/cordon-run/cordon/mounts"
)

// notFoundRes are the lines in which a shell or env reports a command it
// did not find: dash, bash, zsh, busybox and env.
var notFoundRes = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\S+: (?:line )?\d+: ([^/:\s]+): (?:command )?not found$`),
		regexp.MustCompile(`(?m)^\S+: ([^/:\s]+): (?:command )?not found$`),
		regexp.MustCompile(`(?m)^zsh: command not found: ([^/:\s]+)$`),
		regexp.MustCompile(`(?m)^env: ['‘]([^/'’\s]+)['’]: No such file or directory$`),
	}
})

// notFoundName is the command that an exit status 127 says was not found:
// the command itself when cordon's init could not execute it, else the
// name a shell's message on stderr gives; "" when neither does.
func notFoundName(o Outcome, args []string) string {
	if o.ExitCode != ExitNotFound {
		return ""
	}
	if o.Init != nil && o.Init.ExecCode == ExitNotFound && len(args) > 0 {
		return args[0]
	}
	for _, re := range notFoundRes() {
		if m := re.FindAllStringSubmatch(o.Stderr, -1); len(m) > 0 {
			return m[len(m)-1][1]
		}
	}
	return ""
}

// HostCommandHint adds to the failure of a command that was not found in
// the sandbox (exit 127) where the caller's host has it, on the caller's
// PATH, in a folder the sandbox does not show (p says what it shows): the
// host path, and how to mount the folder read-only. Any other result is
// returned as it is.
func HostCommandHint(res Result, o Outcome, args []string, p Policy) Result {
	if res.ExitCode != ExitNotFound || res.FailureType != FailureProcessError || p == nil {
		return res
	}
	name := notFoundName(o, args)
	if name == "" || strings.Contains(name, "/") {
		return res
	}
	host := lookHostPath(name)
	if host == "" {
		return res
	}
	err := p.Check(host, false)
	if err == nil {
		return res
	}
	dir := filepath.Dir(host)
	if errors.Is(err, mounts.ErrDenied) {
		res.FailureDetail += fmt.Sprintf("; %s is %s on the host, which the sandbox's deny list hides: it cannot run here", name, host)
		return res
	}
	res.FailureDetail += fmt.Sprintf("; %s is %s on the host, in a folder the sandbox does not show: mount it read-only with "+
		"-v %s:%s:ro (cordon run, session start), or add {source: %s, readonly: true} under sandbox.mounts in cordon.yaml "+
		"(toolchains: true mounts the known toolchains below $HOME that PATH reaches)", name, host, dir, dir, dir)
	return res
}

// lookHostPath is the executable file name names on the caller's PATH, as
// the kernel resolves it, or "".
func lookHostPath(name string) string {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}
