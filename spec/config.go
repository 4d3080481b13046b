package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// DefaultEnvPass is the list of host variables passed into the sandbox when
// a config has no env.pass: locale, terminal, PATH and the CA certificate
// variables (CAVariables), none of which carries a secret. `pass: []` passes none.
var DefaultEnvPass = append([]string{"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ"}, CAVariables...)

var (
	topKeys     = []string{"sandbox", "delegation", "audit", "audit_required", "session"}
	sandboxKeys = []string{"root", "readonly", "mounts", "deny", "strict_deny", "protect", "protect_defaults", "network", "system", "limits", "env", "require_os_sandbox", "allow_home_workspace", "git_identity", "git_worktree", "caches", "toolchains", "workspace_mode", "overlay"}
	mountKeys   = []string{"source", "target", "readonly", "name", "suffixes", "max_file_bytes"}
)

// Load reads and validates the YAML config at path. Relative paths in it
// are relative to the file's folder. Every problem is reported at once: the
// error joins one *FieldError per problem and matches ErrInvalidConfig.
func Load(path string) (*Config, error) {
	data, err := readRegular(path, false)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read %s: %w", ErrInvalidConfig, path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot resolve %s: %w", ErrInvalidConfig, path, err)
	}
	return Parse(data, filepath.Dir(abs), path)
}

// Parse validates a YAML config held in memory. Relative paths in it are
// relative to baseDir (made absolute first); source names the file in
// messages. Every problem is reported at once, as for Load.
func Parse(data []byte, baseDir, source string) (*Config, error) {
	d := newDecoder()
	base, err := filepath.Abs(baseDir)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot resolve the base folder %q: %w", ErrInvalidConfig, baseDir, err)
	}
	cfg := &Config{
		Source:        source,
		Delegation:    Delegation{MaxDepth: DefaultMaxDepth},
		AuditRequired: true,
		Session:       DefaultSession(),
	}
	top := d.fields(d.document(data, true), "", topKeys, true)
	d.sandbox(top["sandbox"], base, &cfg.Sandbox)
	dl := d.fields(top["delegation"], "delegation", []string{"max_depth"}, true)
	if v := dl["max_depth"]; !isNull(v) {
		if n, ok := d.positiveInt(v, "delegation.max_depth", "give the deepest worker chain allowed, 1 or more"); ok {
			if n > 1000 {
				d.fail("delegation.max_depth", v.Line, fmt.Sprintf("%d is more than 1000", n), "give a depth from 1 to 1000")
			} else {
				cfg.Delegation.MaxDepth = int(n)
			}
		}
	}
	if v := top["audit"]; !isNull(v) {
		if s, ok := d.str(v, "audit"); ok {
			p, prob := hostPath(s, base)
			if prob == "" {
				if fi, err := os.Stat(p); err == nil && fi.IsDir() {
					prob = fmt.Sprintf("%s is a directory", p)
				}
			}
			if prob != "" {
				d.fail("audit", v.Line, prob, "give the path of a file to append to (it is created if missing)")
			} else {
				cfg.Audit = p
			}
		}
	}
	if v := top["audit_required"]; !isNull(v) {
		if b, ok := d.boolean(v, "audit_required"); ok {
			cfg.AuditRequired = b
		}
	}
	d.session(top["session"], &cfg.Session)
	validateSandbox(&cfg.Sandbox, d)
	if err := d.result("config", source); err != nil {
		return nil, err
	}
	return cfg, nil
}

// sandbox decodes and normalizes the sandbox section into sb.
func (d *decoder) sandbox(n *yaml.Node, base string, sb *Sandbox) {
	const field = "sandbox"
	f := d.fields(n, field, sandboxKeys, true)
	sb.RequireOSSandbox = true
	sb.System = System{Kind: SystemHost}

	// The root comes first: deny and protect are relative to it.
	rootField := sub(field, "root")
	rootRaw, rootOK := ".", true
	if v := f["root"]; !isNull(v) {
		rootRaw, rootOK = d.str(v, rootField)
	}
	if rootOK {
		line := d.line(rootField)
		root, prob := hostPath(rootRaw, base)
		if prob == "" {
			prob = placementProblem(root)
		}
		if prob == "" {
			prob = dirProblem(root)
		}
		if prob != "" {
			d.fail(rootField, line, prob, "give an existing project directory, relative to the config's folder (default: the folder itself)")
			rootOK = false
		} else {
			sb.Root = root
		}
	}

	if v := f["readonly"]; !isNull(v) {
		sb.Readonly, _ = d.boolean(v, sub(field, "readonly"))
	}
	d.workspaceMode(f, sb, rootOK)
	for i, item := range d.seq(f["mounts"], sub(field, "mounts")) {
		// A mount with problems is kept too, so that indexes in later
		// messages match the file; the config is discarded anyway.
		sb.Mounts = append(sb.Mounts, d.mount(item, index(sub(field, "mounts"), i), base))
	}
	sb.Deny = d.pathList(f["deny"], sub(field, "deny"), sb.Root, rootOK)
	if v := f["strict_deny"]; !isNull(v) {
		sb.StrictDeny, _ = d.boolean(v, sub(field, "strict_deny"))
	}
	// protect adds to the built-in list; protect_defaults: false leaves
	// the list out (a config that writes protect: [secrets/] must not
	// make .envrc or .git/hooks writable by the way).
	defaults := true
	if v := f["protect_defaults"]; !isNull(v) {
		defaults, _ = d.boolean(v, sub(field, "protect_defaults"))
	}
	sb.Protect = []string{}
	if defaults && rootOK {
		sb.Protect = joinAll(sb.Root, DefaultProtect)
	}
	if raw, present := d.strList(f["protect"], sub(field, "protect")); present {
		for _, p := range d.rootRelative(raw, sb.Root, rootOK) {
			if !slices.Contains(sb.Protect, p) {
				sb.Protect = append(sb.Protect, p)
			}
		}
	}
	if v := f["network"]; !isNull(v) {
		sb.Network, _ = d.network(v, sub(field, "network"))
	}
	if v := f["system"]; !isNull(v) {
		sb.System = d.system(v, sub(field, "system"), base)
	}
	if v := f["limits"]; !isNull(v) {
		sb.Limits = d.limits(v, sub(field, "limits"))
	}
	sb.Env = d.env(f["env"], sub(field, "env"))
	sb.Caches, sb.Toolchains = slices.Clone(CacheNames), true
	if v := f["caches"]; !isNull(v) {
		sb.Caches = d.caches(v, sub(field, "caches"))
	}
	if v := f["toolchains"]; !isNull(v) {
		sb.Toolchains, _ = d.boolean(v, sub(field, "toolchains"))
	}
	if v := f["allow_home_workspace"]; !isNull(v) {
		sb.AllowHomeWorkspace, _ = d.boolean(v, sub(field, "allow_home_workspace"))
	}
	for _, k := range []struct {
		key string
		off *bool
	}{{"git_identity", &sb.NoGitIdentity}, {"git_worktree", &sb.NoGitWorktree}} {
		if v := f[k.key]; !isNull(v) {
			if b, ok := d.boolean(v, sub(field, k.key)); ok {
				*k.off = !b
			}
		}
	}
	if v := f["require_os_sandbox"]; !isNull(v) {
		if b, ok := d.boolean(v, sub(field, "require_os_sandbox")); ok {
			sb.RequireOSSandbox = b
		}
	}
}

// mount decodes one entry of sandbox.mounts.
func (d *decoder) mount(n *yaml.Node, field, base string) Mount {
	var m Mount
	if !d.usable(n, field) {
		return m
	}
	if !isNull(n) && n.Kind != yaml.MappingNode {
		d.fail(field, n.Line, fmt.Sprintf("must be a mapping, not %s", describe(n)), "write {source: PATH, target: PATH, readonly: true}")
		return m
	}
	d.lines[field] = n.Line
	f := d.fields(n, field, mountKeys, true)
	sf := sub(field, "source")
	if v := f["source"]; isNull(v) {
		d.fail(sf, n.Line, "is required", "give the host path to mount (it must exist)")
	} else if s, sok := d.str(v, sf); sok {
		src, prob := hostPath(s, base)
		if prob == "" {
			if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
				prob = fmt.Sprintf("%s does not exist", src)
			} else if err != nil {
				prob = fmt.Sprintf("%s cannot be read: %v", src, errors.Unwrap(err))
			}
		}
		if prob != "" {
			d.fail(sf, v.Line, prob, "give an existing host path, relative to the config's folder; cordon never creates mount sources")
		} else {
			m.Source = src
		}
	}
	tf := sub(field, "target")
	if v := f["target"]; !isNull(v) {
		if s, tok := d.str(v, tf); tok {
			if t, prob := targetPath(s); prob != "" {
				d.fail(tf, v.Line, prob, "give an absolute path inside the sandbox, or leave target out to mount at the source's own path")
			} else {
				m.Target = t
			}
		}
	} else if m.Source != "" {
		m.Target = m.Source
		if prob := placementProblem(m.Target); prob != "" {
			d.fail(tf, n.Line, "defaults to the source, which "+prob, "give a target elsewhere, or mount another source")
			m.Target = ""
		}
	}
	if v := f["readonly"]; !isNull(v) {
		m.Readonly, _ = d.boolean(v, sub(field, "readonly"))
	}
	if v := f["name"]; !isNull(v) {
		nf := sub(field, "name")
		if s, nok := d.str(v, nf); nok {
			if !zoneNameRe().MatchString(s) {
				d.fail(nf, v.Line, fmt.Sprintf("%q is not a valid zone name", s), zoneNameFix)
			} else {
				m.Name = s
			}
		}
	}
	sfx := sub(field, "suffixes")
	if raw, present := d.strList(f["suffixes"], sfx); present {
		seen := map[string]bool{}
		m.Suffixes = []string{}
		for _, it := range raw {
			switch s := it.s; {
			case !strings.HasPrefix(s, ".") || len(s) < 2 || strings.ContainsAny(s, "/\\"):
				d.fail(it.field, it.line, fmt.Sprintf("%q is not a file suffix", s), `write suffixes with their dot: [".json", ".txt"]`)
			case !seen[s]:
				seen[s] = true
				m.Suffixes = append(m.Suffixes, s)
			}
		}
	}
	if v := f["max_file_bytes"]; !isNull(v) {
		m.MaxFileBytes, _ = d.size(v, sub(field, "max_file_bytes"), `give a size such as "10MiB", or remove the key for no limit`)
	}
	return m
}

// targetPath checks and cleans a mount target: an absolute sandbox path
// ("~" is the host's $HOME, as sources and targets share one namespace),
// without "..", that does not replace / or a kernel directory.
func targetPath(s string) (string, string) {
	if prob := pathProblem(s); prob != "" {
		return "", prob
	}
	t, prob := expandHome(s)
	if prob != "" {
		return "", prob
	}
	if !filepath.IsAbs(t) {
		return "", fmt.Sprintf("%q must be absolute", s)
	}
	for _, el := range strings.Split(t, "/") {
		if el == ".." {
			return "", fmt.Sprintf("%q contains '..'", s)
		}
	}
	t = filepath.Clean(t)
	if prob := placementProblem(t); prob != "" {
		return "", prob
	}
	return t, ""
}

// pathList reads deny: a list of paths relative to the root.
func (d *decoder) pathList(n *yaml.Node, field, root string, rootOK bool) []string {
	raw, present := d.strList(n, field)
	if !present {
		return nil
	}
	return d.rootRelative(raw, root, rootOK)
}

// rootRelative normalizes deny or protect entries: relative ones are
// joined with root, "~" is $HOME, trailing slashes are dropped, duplicates
// are merged. An entry may be a pattern (see IsPattern): "**/.env".
func (d *decoder) rootRelative(raw []strItem, root string, rootOK bool) []string {
	out := []string{}
	seen := map[string]bool{}
	const fix = "give a path relative to the root (\".env\", \"secrets/\"), an absolute path or ~/path"
	for _, it := range raw {
		s, ef, line := it.s, it.field, it.line
		if prob := pathProblem(s); prob != "" {
			d.fail(ef, line, prob, fix)
			continue
		}
		exp, prob := expandHome(s)
		if prob != "" {
			d.fail(ef, line, prob, fix)
			continue
		}
		if !filepath.IsAbs(exp) && !rootOK {
			continue // the root's own error says why
		}
		p, _ := hostPath(exp, root)
		if prob := patternProblem(p); prob != "" {
			d.fail(ef, line, strings.Replace(prob, strconv.Quote(p), strconv.Quote(s), 1), "write * ? [..] within a component and ** as a whole one: \"**/.env\", \"secrets/*.pem\"")
			continue
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// joinAll joins each relative entry of rel with root.
func joinAll(root string, rel []string) []string {
	out := make([]string, 0, len(rel))
	for _, r := range rel {
		out = append(out, filepath.Join(root, r))
	}
	return out
}

// system reads `host | none | /abs/rootfs`.
func (d *decoder) system(n *yaml.Node, field, base string) System {
	const fix = "write host, none, or the absolute path of a root filesystem directory"
	s, ok := d.str(n, field)
	if !ok {
		return System{Kind: SystemHost}
	}
	switch s {
	case string(SystemHost):
		return System{Kind: SystemHost}
	case string(SystemNone):
		return System{Kind: SystemNone}
	}
	if prob := pathProblem(s); prob != "" {
		d.fail(field, n.Line, prob, fix)
		return System{Kind: SystemHost}
	}
	p, prob := expandHome(s)
	switch {
	case prob != "":
	case !filepath.IsAbs(p):
		prob = fmt.Sprintf("%q is neither host, none nor an absolute directory", s)
	case filepath.Clean(p) == "/":
		prob = "/ as a rootfs would expose the host's secrets"
		d.fail(field, n.Line, prob, "write system: host, which masks them")
		return System{Kind: SystemHost}
	default:
		p = filepath.Clean(p)
		prob = dirProblem(p)
	}
	if prob != "" {
		d.fail(field, n.Line, prob, fix)
		return System{Kind: SystemHost}
	}
	return System{Kind: SystemRootfs, Rootfs: p}
}

// env reads {pass: [NAME...], set: {NAME: value}}.
func (d *decoder) env(n *yaml.Node, field string) Env {
	f := d.fields(n, field, []string{"pass", "set"}, true)
	var e Env
	pf := sub(field, "pass")
	const fix = "use letters, digits and '_', not starting with a digit"
	if raw, present := d.strList(f["pass"], pf); present {
		seen := map[string]bool{}
		e.Pass = []string{}
		for _, it := range raw {
			switch s := it.s; {
			case !envNameRe().MatchString(s):
				d.fail(it.field, it.line, fmt.Sprintf("%q is not a variable name", s), fix)
			case !seen[s]:
				seen[s] = true
				e.Pass = append(e.Pass, s)
			}
		}
	} else {
		e.Pass = append([]string(nil), DefaultEnvPass...)
	}
	sf := sub(field, "set")
	v := f["set"]
	if isNull(v) || !d.usable(v, sf) {
		return e
	}
	if v.Kind != yaml.MappingNode {
		d.fail(sf, v.Line, fmt.Sprintf("must be a mapping, not %s", describe(v)), "write set: {NAME: value}")
		return e
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		kf := sub(sf, k.Value)
		if k.Kind != yaml.ScalarNode || !envNameRe().MatchString(k.Value) {
			d.fail(sf, k.Line, fmt.Sprintf("%q is not a variable name", k.Value), fix)
			continue
		}
		if _, dup := e.Set[k.Value]; dup {
			d.fail(kf, k.Line, fmt.Sprintf("variable %q is set twice", k.Value), "keep one of them")
			continue
		}
		if isNull(val) {
			d.fail(kf, val.Line, "has no value", `write NAME: "" for an empty value`)
			continue
		}
		if !d.scalar(val, kf, "a string", "quote the value", "!!str", "!!int", "!!float", "!!bool") {
			continue
		}
		if strings.IndexByte(val.Value, 0) >= 0 {
			d.fail(kf, val.Line, "contains a NUL byte", "remove the NUL byte")
			continue
		}
		if e.Set == nil {
			e.Set = map[string]string{}
		}
		e.Set[k.Value] = val.Value
	}
	return e
}

// caches reads `caches: true | false | [go, npm, …]`.
func (d *decoder) caches(n *yaml.Node, field string) []string {
	fix := "write true (every cache), false (none) or a list of: " + strings.Join(CacheNames, ", ")
	if n.Kind == yaml.ScalarNode {
		if b, ok := d.boolean(n, field); ok && b {
			return slices.Clone(CacheNames)
		}
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(field, n.Line, fmt.Sprintf("must be true, false or a list, not %s", describe(n)), fix)
		return nil
	}
	raw, _ := d.strList(n, field)
	out := []string{}
	for _, it := range raw {
		switch {
		case !slices.Contains(CacheNames, it.s):
			d.fail(it.field, it.line, fmt.Sprintf("%q is not a cache cordon keeps", it.s), fix)
		case !slices.Contains(out, it.s):
			out = append(out, it.s)
		}
	}
	return out
}
