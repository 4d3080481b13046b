package spec

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// maxPathLen is PATH_MAX on Linux; longer paths cannot be opened anyway.
const maxPathLen = 4096

// kernelDirs are sandbox paths that cordon itself sets up (minimal /proc
// and /dev, and /sys); a mount or workspace there would replace them.
var kernelDirs = []string{"/proc", "/dev", "/sys"}

var (
	zoneNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`) })
	envNameRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	labelRe    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$`) })
)

const zoneNameFix = "use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"

// pathProblem returns what is wrong with a path string before it is
// interpreted, or "".
func pathProblem(p string) string {
	switch {
	case p == "":
		return "is empty"
	case strings.IndexByte(p, 0) >= 0:
		return "contains a NUL byte"
	case len(p) > maxPathLen:
		return fmt.Sprintf("is longer than %d bytes", maxPathLen)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Sprintf("contains the control character %q", r)
		}
	}
	return ""
}

// expandHome replaces a leading "~" or "~/" with $HOME. "~user" is refused.
func expandHome(p string) (string, string) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		if strings.HasPrefix(p, "~") {
			return "", "uses ~user, which is not supported"
		}
		return p, ""
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" || !filepath.IsAbs(home) {
		return "", "starts with ~ but $HOME is not set to an absolute path"
	}
	return filepath.Join(home, p[1:]), ""
}

// hostPath checks p, expands "~" and makes it absolute relative to base
// (which must be absolute), then cleans it.
func hostPath(p, base string) (string, string) {
	if prob := pathProblem(p); prob != "" {
		return "", prob
	}
	p, prob := expandHome(p)
	if prob != "" {
		return "", prob
	}
	if !filepath.IsAbs(p) {
		p = base + "/" + p
	}
	c := filepath.Clean(p)
	if prob := dotDotAfterLink(p, c); prob != "" {
		return "", prob
	}
	return c, ""
}

// dotDotAfterLink refuses a path whose ".." comes after a symbolic link
// the kernel would follow on the way: it takes that ".." to the link
// target's parent, where the clean form c names another place (or the
// same one by chance: refused all the same, since the link can change).
func dotDotAfterLink(p, c string) string {
	if !slices.Contains(strings.Split(p, "/"), "..") {
		return ""
	}
	cur, link := "/", ""
	for _, comp := range strings.Split(p, "/") {
		switch comp {
		case "", ".":
			continue
		case "..":
			if link != "" {
				return fmt.Sprintf("%s has \"..\" after the symbolic link %s: the kernel takes it from the link's target, not from %s; write the path without \"..\" (it cleans to %s)", p, link, filepath.Dir(link), c)
			}
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, comp)
		fi, err := os.Lstat(next)
		if err != nil {
			// Missing: the kernel walks no further now; a ".." after a
			// link still counts, since the name may appear.
			cur = next
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			link = next
			if next, err = filepath.EvalSymlinks(next); err != nil {
				return ""
			}
		}
		cur = next
	}
	return ""
}

// within reports whether p is dir or lies below it. Both must be clean and
// absolute.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// placementProblem says why an absolute clean sandbox path cannot hold the
// workspace or a mount: the whole filesystem, or a kernel directory.
func placementProblem(p string) string {
	if p == "/" {
		return "is /, which would replace the whole sandbox filesystem"
	}
	for _, k := range kernelDirs {
		if within(p, k) {
			return fmt.Sprintf("is under %s, which cordon sets up itself", k)
		}
	}
	return ""
}

// dirProblem says why p is not an existing directory, or "".
func dirProblem(p string) string {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Sprintf("%s does not exist", p)
	case err != nil:
		return fmt.Sprintf("%s cannot be read: %v", p, errors.Unwrap(err))
	case !fi.IsDir():
		return fmt.Sprintf("%s is not a directory", p)
	}
	return ""
}

// normalizeAllow checks one network allow entry and returns it in canonical
// form (lower-case host; tcp:// lower-case), or a problem.
func normalizeAllow(e string) (string, string) {
	if e == "" {
		return "", "is empty"
	}
	if strings.IndexByte(e, 0) >= 0 {
		return "", "contains a NUL byte"
	}
	if len(e) > len(tcpScheme) && strings.EqualFold(e[:len(tcpScheme)], tcpScheme) {
		return normalizeTCPAllow(e)
	}
	if strings.Contains(e, "://") || strings.ContainsAny(e, "/?#@ ") {
		return "", fmt.Sprintf("%q is not host[:port] or tcp://host:port (no other scheme, no path, user or spaces)", e)
	}
	host, port := e, ""
	if strings.HasPrefix(e, "[") {
		end := strings.Index(e, "]")
		if end < 0 {
			return "", fmt.Sprintf("%q has an unclosed '['", e)
		}
		host, port = e[1:end], e[end+1:]
		if port != "" {
			if !strings.HasPrefix(port, ":") {
				return "", fmt.Sprintf("%q has text after ']' that is not :port", e)
			}
			port = port[1:]
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", fmt.Sprintf("%q: only an IPv6 address goes between [ and ]", e)
		}
		host = "[" + a.String() + "]"
	} else {
		if strings.Count(e, ":") > 1 {
			return "", fmt.Sprintf("%q: write an IPv6 address in brackets, as [::1]:443", e)
		}
		if i := strings.IndexByte(e, ':'); i >= 0 {
			host, port = e[:i], e[i+1:]
		}
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		if prob := hostProblem(host); prob != "" {
			return "", fmt.Sprintf("%q: %s", e, prob)
		}
	}
	if port != "" || strings.HasSuffix(e, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
			return "", fmt.Sprintf("%q: the port must be a number from 1 to 65535", e)
		}
		return host + ":" + port, ""
	}
	return host, ""
}

// tcpScheme starts an allow entry for a port that carries a protocol
// the network guard does not read (ssh on another port, a database, a
// custom protocol): its bytes pass unread.
const tcpScheme = "tcp://"

// normalizeTCPAllow checks a tcp://host:port entry: a host name (or
// *.domain) and a port, both required; an address is refused, since a
// connection to an allowed address is never read anyway.
func normalizeTCPAllow(e string) (string, string) {
	rest := e[len(tcpScheme):]
	norm, prob := normalizeAllow(rest)
	switch {
	case prob != "":
		return "", fmt.Sprintf("%q: %s", e, prob)
	case strings.HasPrefix(norm, tcpScheme):
		return "", fmt.Sprintf("%q: tcp:// twice", e)
	}
	host, port := splitAllow(norm)
	if port == "" {
		return "", fmt.Sprintf("%q: a tcp:// entry needs a port, as in tcp://%s:22 (the guard then forwards that port's bytes unread)", e, host)
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return "", fmt.Sprintf("%q: a connection to an allowed address is never read; write %s without tcp://", e, norm)
	}
	return tcpScheme + norm, ""
}

// hostProblem checks a lower-case host name or IPv4 address, with an
// optional leading "*." wildcard label.
func hostProblem(host string) string {
	if host == "" {
		return "the host is empty"
	}
	if host == "*" {
		return "a bare * allows every host; write network: true instead"
	}
	name := host
	if strings.HasPrefix(host, "*.") {
		name = host[2:]
	}
	if strings.Contains(name, "*") {
		return "* may only be the whole first label, as in *.example.com"
	}
	if a, err := netip.ParseAddr(name); err == nil {
		if name != host {
			return "a wildcard cannot precede an IP address"
		}
		if !a.Is4() {
			return "write an IPv6 address in brackets, as [::1]:443"
		}
		return ""
	}
	if len(name) > 253 {
		return "the host name is longer than 253 characters"
	}
	for _, l := range strings.Split(name, ".") {
		if !labelRe().MatchString(l) {
			return fmt.Sprintf("%q is not a valid host name label", l)
		}
	}
	return ""
}

// allowCovers reports whether the parent allow entry p admits every
// destination that the child entry c admits. Both are in canonical form.
func allowCovers(p, c string) bool {
	// A tcp:// entry is wider than the same host and port read by the
	// guard: it covers it, and only a tcp:// entry covers a tcp:// one.
	p, pRaw := strings.CutPrefix(p, tcpScheme)
	c, cRaw := strings.CutPrefix(c, tcpScheme)
	if cRaw && !pRaw {
		return false
	}
	ph, pp := splitAllow(p)
	ch, cp := splitAllow(c)
	if pp != "" && pp != cp {
		return false
	}
	if ph == ch {
		return true
	}
	if strings.HasPrefix(ph, "*.") {
		suffix := ph[1:] // ".x.org"
		return strings.HasSuffix(ch, suffix) && len(ch) > len(suffix)
	}
	return false
}

// splitAllow splits a canonical allow entry into host and port ("" = any).
func splitAllow(e string) (string, string) {
	if strings.HasPrefix(e, "[") {
		end := strings.Index(e, "]")
		if end >= 0 && end+1 < len(e) && e[end+1] == ':' {
			return e[:end+1], e[end+2:]
		}
		return e, ""
	}
	if i := strings.LastIndexByte(e, ':'); i >= 0 {
		return e[:i], e[i+1:]
	}
	return e, ""
}

// networkCovers reports whether parent admits every destination of child,
// and lists the child's allow entries that it does not.
func networkCovers(parent, child Network) (bool, []string) {
	if !child.Enabled {
		return true, nil
	}
	if !parent.Enabled {
		return false, nil
	}
	if len(parent.Allow) == 0 {
		return true, nil
	}
	if len(child.Allow) == 0 {
		return false, nil
	}
	var missing []string
	for _, c := range child.Allow {
		ok := false
		for _, p := range parent.Allow {
			if allowCovers(p, c) {
				ok = true
				break
			}
		}
		if !ok {
			missing = append(missing, c)
		}
	}
	return len(missing) == 0, missing
}

// validateSandbox runs the checks that compare fields with each other, and
// the per-field checks for a sandbox that was built in code (a profile). d
// supplies the YAML lines when the sandbox came from a file.
func validateSandbox(sb *Sandbox, d *decoder) {
	targets := map[string]int{}
	names := map[string]int{}
	for i, m := range sb.Mounts {
		mf := index("sandbox.mounts", i)
		tf := sub(mf, "target")
		if m.Target != "" {
			if sb.Root != "" && m.Target == sb.Root {
				d.fail(tf, d.line(tf), fmt.Sprintf("%s is the workspace root, which is mounted there already", m.Target), "choose another target, or make the directory the root")
			} else if j, dup := targets[m.Target]; dup {
				d.fail(tf, d.line(tf), fmt.Sprintf("%s is also the target of sandbox.mounts[%d]", m.Target, j), "give each mount its own target")
			} else {
				targets[m.Target] = i
			}
		}
		if prob, fix := MountPointProblem(sb, i); prob != "" {
			d.fail(tf, d.line(tf), prob, fix)
		}
		if m.Name == "" {
			continue
		}
		nf := sub(mf, "name")
		switch j, dup := names[m.Name]; {
		case m.Name == WorkspaceZone:
			d.fail(nf, d.line(nf), fmt.Sprintf("%q is reserved for the workspace root", WorkspaceZone), "choose another zone name")
		case dup:
			d.fail(nf, d.line(nf), fmt.Sprintf("zone name %q is also used by sandbox.mounts[%d]", m.Name, j), "give each mount its own name")
		default:
			names[m.Name] = i
		}
	}
	guardHomes(sb, d)
	validateAliases(sb, d)
}

// checkNormalized verifies the invariants every Sandbox out of Load, Parse,
// Profile or Derive has: absolute clean paths, no NUL bytes, no negative
// limits and a consistent network policy. Derive checks its parent with it.
func checkNormalized(sb *Sandbox) error {
	var errs []error
	bad := func(field, problem string) {
		errs = append(errs, &FieldError{Field: field, Problem: problem, Fix: "build the sandbox with Load, Parse, Profile or Derive"})
	}
	absClean := func(field, p string) {
		if prob := pathProblem(p); prob != "" {
			bad(field, prob)
		} else if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			bad(field, fmt.Sprintf("%q is not an absolute clean path", p))
		}
	}
	if sb.Root != "" {
		absClean("sandbox.root", sb.Root)
	}
	for i, m := range sb.Mounts {
		absClean(index("sandbox.mounts", i)+".source", m.Source)
		absClean(index("sandbox.mounts", i)+".target", m.Target)
		if m.MaxFileBytes < 0 {
			bad(index("sandbox.mounts", i)+".max_file_bytes", "is negative")
		}
	}
	for i, p := range sb.Deny {
		absClean(index("sandbox.deny", i), p)
	}
	for i, p := range sb.Protect {
		absClean(index("sandbox.protect", i), p)
	}
	switch sb.System.Kind {
	case SystemHost, SystemNone:
	case SystemRootfs:
		absClean("sandbox.system", sb.System.Rootfs)
	default:
		bad("sandbox.system", fmt.Sprintf("unknown kind %q", sb.System.Kind))
	}
	if !sb.Network.Enabled && len(sb.Network.Allow) > 0 {
		bad("sandbox.network", "has an allow list but is off")
	}
	for i, a := range sb.Network.Allow {
		if norm, prob := normalizeAllow(a); prob != "" || norm != a {
			bad(index("sandbox.network.allow", i), fmt.Sprintf("%q is not a canonical host[:port] or tcp://host:port", a))
		}
	}
	l := sb.Limits
	if l.Timeout < 0 || l.Memory < 0 || l.Pids < 0 || l.FileSize < 0 || l.CPUs < 0 || l.Output < 0 || l.CPUs != l.CPUs {
		bad("sandbox.limits", "has a negative or NaN limit")
	}
	return errors.Join(errs...)
}
