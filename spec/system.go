package spec

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"
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

// hostSecretRoots are the system directories searched for files and
// folders that others may not read: a root run's command is uid 0 (without
// capabilities, but the owner of root's files), so it could read every
// root-owned file there whatever its mode, such as a WireGuard key or an
// admin kubeconfig of mode 0600, while an unprivileged user could not.
var hostSecretRoots = []string{"/etc"}

// HostSecrets returns this host's secret files and folders, sorted: the
// hostSecretGlobs that exist, and every regular file or folder under
// hostSecretRoots that others may not read (a folder that others may not
// search, too), as a whole (nothing under such a folder is listed). Under
// system: host they are masked at their own path (SystemSecrets). They are
// host files, so they are denied at every other sandbox path that reaches
// them too, whatever `system` says: a mount of /etc at /hostetc, of
// /etc/shadow itself, or of a symbolic link to /etc (WithAliases; the mount
// table matches them as host paths).
//
// One run asks several times (the mount table, the aliases, the OCI plan),
// and walking /etc costs milliseconds each time, so an answer is reused for
// up to hostSecretsFresh while the roots' own modification times stand
// still (a file made or removed directly in /etc is seen at once); a mode
// changed deeper down within that second is seen by the next run.
func HostSecrets() []string {
	stamp := rootsStamp()
	secretsMemo.Lock()
	defer secretsMemo.Unlock()
	now := time.Now()
	if secretsMemo.list == nil || stamp != secretsMemo.stamp || now.Sub(secretsMemo.at) > hostSecretsFresh || now.Before(secretsMemo.at) {
		secretsMemo.list, secretsMemo.at, secretsMemo.stamp = walkHostSecrets(), now, stamp
	}
	return slices.Clone(secretsMemo.list)
}

// hostSecretsFresh is how long HostSecrets reuses its walk.
const hostSecretsFresh = time.Second

var secretsMemo struct {
	sync.Mutex
	at    time.Time
	stamp string
	list  []string
}

// rootsStamp is the modification and change times of hostSecretRoots.
func rootsStamp() string {
	var b []byte
	for _, r := range hostSecretRoots {
		fi, err := os.Stat(r)
		if err != nil {
			b = append(b, '-')
			continue
		}
		b = fi.ModTime().AppendFormat(b, time.RFC3339Nano)
		b = append(b, ' ')
		b = append(b, fi.Mode().String()...)
	}
	return string(b)
}

// walkHostSecrets looks for HostSecrets' answer on the host.
func walkHostSecrets() []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, g := range hostSecretGlobs {
		matches, _ := filepath.Glob(g)
		for _, m := range matches {
			add(m)
		}
	}
	for _, root := range hostSecretRoots {
		// A root that is a symbolic link is not followed.
		if fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			walkSecretDir(fd, root, add)
		}
	}
	sort.Strings(out)
	return out
}

// walkSecretDir adds every regular file and folder below the folder open
// at fd (named dir; walkSecretDir closes fd) that others may not read, or
// (a folder) search, and does not descend into such a folder. An entry's
// type comes from the folder's listing and its mode from fstatat relative
// to the open folder: the walk of /etc looks up a name once, where
// filepath.WalkDir and an lstat of the full path resolve every parent again
// for each of the thousand entries (30% less CPU measured). A folder that
// cannot be opened or listed is skipped, as before.
func walkSecretDir(fd int, dir string, add func(string)) {
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	ents, _ := f.ReadDir(-1)
	for _, e := range ents {
		isDir := e.Type().IsDir()
		if !isDir && !e.Type().IsRegular() {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		p := dir + "/" + e.Name()
		if perm := st.Mode & 0o777; perm&0o004 == 0 || (isDir && perm&0o001 == 0) {
			add(p)
			continue
		}
		if isDir {
			if sub, err := unix.Openat(fd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				walkSecretDir(sub, p, add)
			}
		}
	}
}
