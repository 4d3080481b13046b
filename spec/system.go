package spec

import (
	"os"
	"path/filepath"
	"sort"
)

// HostSystemDirs are the host directories that `system: host` exposes
// read-only, in mount order. Only those that exist on the host are used.
var HostSystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// RuntimeDirs are the minimal directories a dynamically linked program needs
// to start; the strict profile mounts them read-only with `system: none`.
var RuntimeDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// hostSecretGlobs are host paths under the system directories that are masked
// (made invisible) whenever the host system is exposed.
var hostSecretGlobs = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/ssh/ssh_host_*key", "/etc/ssl/private", "/etc/sudoers", "/etc/sudoers.d",
	"/etc/security/opasswd", "/etc/krb5.keytab",
}

// SystemDirs returns the host system directories visible read-only in sb,
// limited to those that exist on this host.
func SystemDirs(sb *Sandbox) []string {
	if sb.System.Kind != SystemHost {
		return nil
	}
	return existing(HostSystemDirs)
}

// ExistingDirs returns the entries of dirs that exist on this host.
func ExistingDirs(dirs []string) []string { return existing(dirs) }

func existing(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// SystemSecrets returns the host paths that are masked because the host
// system is exposed: password hashes, ssh host keys, TLS private keys and
// sudo rules. Globs are expanded against this host; the result is sorted.
func SystemSecrets(sb *Sandbox) []string {
	if sb.System.Kind != SystemHost {
		return nil
	}
	return HostSecrets()
}

// HostSecrets returns this host's secret files and folders (the globs
// SystemSecrets masks under system: host), expanded and sorted. They are
// host files, so they are denied at every other sandbox path that reaches
// them too, whatever `system` says: a mount of /etc at /hostetc, of
// /etc/shadow itself, or of a symbolic link to /etc (WithAliases; the mount
// table matches them as host paths).
func HostSecrets() []string {
	seen := map[string]bool{}
	var out []string
	for _, g := range hostSecretGlobs {
		matches, _ := filepath.Glob(g)
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	sort.Strings(out)
	return out
}
