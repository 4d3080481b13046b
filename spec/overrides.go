package spec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Overrides are the run-time adjustments a front end's flags ask for
// (cordon run --mount, --network, --allow, --env, --readonly, --timeout,
// --memory, --pids). Before any derivation they change the sandbox freely; on a
// derived sandbox (one with a Lineage) they may only narrow it, like any
// other derivation.
type Overrides struct {
	// Mounts are extra mounts in the command line's form SRC[:DST][:ro]
	// (ParseMount), relative to Dir.
	Mounts []string
	// Dir is the folder relative mount sources are taken from.
	Dir string
	// Network gives the sandbox network access.
	Network bool
	// Readonly makes the workspace and every mount read-only.
	Readonly bool
	// Timeout, Memory (a size such as 512MiB) and Pids set limits; 0 or ""
	// leaves a limit alone.
	Timeout time.Duration
	Memory  string
	Pids    int64
	// Allow adds "host[:port]" entries to the network allow list (the
	// config's syntax and validation): a sandbox without network gets
	// exactly these; one with full network keeps it.
	Allow []string
	// Env adds variables: "NAME" passes the host's NAME through, and
	// "NAME=VALUE" sets it.
	Env []string
}

// Apply adjusts sb. Every problem is reported, joined; each matches
// ErrInvalidConfig or, for a derived sandbox asked to widen, ErrWidening.
func (o Overrides) Apply(sb *Sandbox) error {
	if len(sb.Lineage) > 0 && (o.Network || len(o.Mounts) > 0 || len(o.Allow) > 0) {
		return fmt.Errorf("%w: --network, --allow and --mount would widen the sandbox the worker chain derived; "+
			"fix: declare them in the project config, or drop the flag", ErrWidening)
	}
	return errors.Join(o.widen(sb), o.narrow(sb), o.env(sb))
}

// allow adds the --allow entries to sb's network: a sandbox without
// network gets an allow list of exactly these; one with full network
// keeps it (an allow list would narrow it).
func (o Overrides) allow(sb *Sandbox) error {
	if len(o.Allow) == 0 || sb.Network.Enabled && len(sb.Network.Allow) == 0 {
		return nil
	}
	var errs []error
	add := make([]string, 0, len(o.Allow))
	for _, a := range o.Allow {
		e, prob := normalizeAllow(a)
		if prob != "" {
			errs = append(errs, fmt.Errorf("%w: --allow %s: %s; fix: give host[:port], as network.allow takes it (example.com, *.example.com, 10.0.0.1:8080)", ErrInvalidConfig, a, prob))
			continue
		}
		if !slices.Contains(sb.Network.Allow, e) && !slices.Contains(add, e) {
			add = append(add, e)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	sb.Network = Network{Enabled: true, Allow: append(slices.Clone(sb.Network.Allow), add...)}
	return nil
}

// env applies the --env entries: NAME passes the host's variable through,
// NAME=VALUE sets it.
func (o Overrides) env(sb *Sandbox) error {
	var errs []error
	for _, e := range o.Env {
		name, val, set := strings.Cut(e, "=")
		if !envNameRe().MatchString(name) {
			errs = append(errs, fmt.Errorf("%w: --env %q: %q is not a variable name; fix: give NAME or NAME=VALUE (letters, digits and _, not starting with a digit)", ErrInvalidConfig, e, name))
			continue
		}
		if strings.ContainsRune(val, 0) {
			errs = append(errs, fmt.Errorf("%w: --env %s: the value contains a NUL byte", ErrInvalidConfig, name))
			continue
		}
		if set {
			sb.Env.Set = maps.Clone(sb.Env.Set) // never the caller's map
			if sb.Env.Set == nil {
				sb.Env.Set = map[string]string{}
			}
			sb.Env.Set[name] = val
			continue
		}
		if !slices.Contains(sb.Env.Pass, name) {
			sb.Env.Pass = append(slices.Clone(sb.Env.Pass), name)
		}
	}
	return errors.Join(errs...)
}

// widen applies what may add access (only before any derivation).
func (o Overrides) widen(sb *Sandbox) error {
	if o.Network {
		sb.Network = Network{Enabled: true}
	}
	errs := []error{o.allow(sb)}
	for i, m := range o.Mounts {
		mt, err := ParseMount(m, o.Dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: --mount #%d %q: %w", ErrInvalidConfig, i+1, m, err))
			continue
		}
		for _, existing := range sb.Mounts {
			if existing.Target == mt.Target {
				errs = append(errs, fmt.Errorf("%w: --mount %q: target %s is already mounted; fix: pick another target", ErrInvalidConfig, m, mt.Target))
			}
		}
		if mt.Target == sb.Root {
			errs = append(errs, fmt.Errorf("%w: --mount %q: target %s is the workspace root; fix: pick another target", ErrInvalidConfig, m, mt.Target))
		}
		sb.Mounts = append(sb.Mounts, mt)
	}
	return errors.Join(errs...)
}

// narrow applies what can only take access away or change limits; on a
// derived sandbox a limit may be lowered but never raised.
func (o Overrides) narrow(sb *Sandbox) error {
	if o.Readonly {
		sb.Readonly = true
		for i := range sb.Mounts {
			sb.Mounts[i].Readonly = true
		}
	}
	derived := len(sb.Lineage) > 0
	var errs []error
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("%w: --timeout must be above 0", ErrInvalidConfig))
	} else if o.Timeout > 0 {
		if sb.Limits.Timeout > 0 && o.Timeout > sb.Limits.Timeout && derived {
			errs = append(errs, fmt.Errorf("%w: --timeout %s is above the derived sandbox's %s", ErrWidening, o.Timeout, sb.Limits.Timeout))
		} else {
			sb.Limits.Timeout = o.Timeout
		}
	}
	if o.Memory != "" {
		l, err := ParseLimit("memory", o.Memory)
		var le *LimitError
		switch {
		case errors.As(err, &le):
			errs = append(errs, fmt.Errorf("%w: --memory %q: %s; fix: %s", ErrInvalidConfig, o.Memory, le.Problem, le.Fix))
		case err != nil:
			errs = append(errs, err)
		case sb.Limits.Memory > 0 && l.Memory > sb.Limits.Memory && derived:
			errs = append(errs, fmt.Errorf("%w: --memory %s is above the derived sandbox's %s", ErrWidening, o.Memory, FormatBytes(sb.Limits.Memory)))
		default:
			sb.Limits.Memory = l.Memory
		}
	}
	if o.Pids < 0 {
		errs = append(errs, fmt.Errorf("%w: --pids must be above 0", ErrInvalidConfig))
	} else if o.Pids > 0 {
		if sb.Limits.Pids > 0 && o.Pids > sb.Limits.Pids && derived {
			errs = append(errs, fmt.Errorf("%w: --pids %d is above the derived sandbox's %d", ErrWidening, o.Pids, sb.Limits.Pids))
		} else {
			sb.Limits.Pids = o.Pids
		}
	}
	return errors.Join(errs...)
}
