package ociruntime

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cordon-run/cordon/spec"
)

// The annotations that carry cordon's boundary on an OCI bundle. Each list
// is comma-separated; paths are container paths.
const (
	// AnnotationDeny lists container paths that are invisible and
	// unwritable (the config's sandbox.deny).
	AnnotationDeny = "run.cordon.deny"
	// AnnotationProtect lists container paths that stay readable but are
	// never writable (the config's sandbox.protect).
	AnnotationProtect = "run.cordon.protect"
	// AnnotationNetworkAllow lists the hosts the container may reach (the
	// config's sandbox.network.allow).
	AnnotationNetworkAllow = "run.cordon.network.allow"
	// AnnotationAudit is the host path of the audit log (the config's
	// audit).
	AnnotationAudit = "run.cordon.audit"

	annotationPrefix = "run.cordon."
)

// known is every annotation this runtime reads, in the order it checks them.
var known = []string{AnnotationDeny, AnnotationProtect, AnnotationNetworkAllow, AnnotationAudit}

// Boundary is what a bundle's run.cordon.* annotations ask of cordon. The
// zero Boundary asks nothing: the container runs as under runc.
type Boundary struct {
	// Deny and Protect are absolute container paths.
	Deny    []string
	Protect []string
	// Allow is the network allow list in the config's canonical form.
	Allow []string
	// Audit is the host path of the audit log, or "".
	Audit string
}

// Empty reports whether b asks nothing of cordon.
func (b Boundary) Empty() bool {
	return len(b.Deny) == 0 && len(b.Protect) == 0 && len(b.Allow) == 0 && b.Audit == ""
}

// AnnotationError is a refused run.cordon.* annotation. It matches
// ErrAnnotation, and also spec.ErrInvalidConfig when the config's own
// validation refused the value (Err holds that error then).
type AnnotationError struct {
	// Annotation is the key, "run.cordon.deny".
	Annotation string
	// Problem says what is wrong; Fix what to write instead.
	Problem, Fix string
	// Err is the config's error, or nil.
	Err error
}

// Error renders the refusal for the runtime log.
func (e *AnnotationError) Error() string {
	msg := fmt.Sprintf("annotation %s: %s", e.Annotation, e.Problem)
	if e.Fix != "" {
		msg += "; fix: " + e.Fix
	}
	return msg
}

// Unwrap returns the config's error, if any.
func (e *AnnotationError) Unwrap() error { return e.Err }

// Is reports whether target is ErrAnnotation.
func (e *AnnotationError) Is(target error) bool { return target == ErrAnnotation }

// ParseBoundary reads the run.cordon.* annotations of a bundle whose root
// filesystem is the host directory rootfs, with the config's syntax and
// validation (spec.Parse). Every problem is reported at once. An unknown
// run.cordon.* key is refused: a misspelt boundary must not run as none.
func ParseBoundary(annotations map[string]string, rootfs string) (Boundary, error) {
	var errs []error
	var keys []string
	for k := range annotations {
		// Any case: Run.cordon.protect is a misspelt boundary too.
		if strings.HasPrefix(strings.ToLower(k), annotationPrefix) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return Boundary{}, nil
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !isKnown(k) {
			errs = append(errs, &AnnotationError{Annotation: k, Problem: "is not an annotation cordon-oci knows",
				Fix: "use " + strings.Join(known, ", ")})
		}
	}
	for _, k := range []string{AnnotationDeny, AnnotationProtect} {
		if v, ok := annotations[k]; ok && strings.TrimSpace(v) == "" {
			// An empty list would run the container with no boundary the
			// bundle's author may believe it has.
			errs = append(errs, &AnnotationError{Annotation: k, Problem: "is empty",
				Fix: "write absolute container paths, comma-separated: /etc/secret,/data/keys, or leave the annotation out"})
		}
	}
	deny, e1 := containerPaths(AnnotationDeny, annotations[AnnotationDeny])
	protect, e2 := containerPaths(AnnotationProtect, annotations[AnnotationProtect])
	errs = append(append(errs, e1...), e2...)
	if len(errs) > 0 {
		return Boundary{}, errors.Join(errs...)
	}
	return parseWithSpec(annotations, rootfs, deny, protect)
}

func isKnown(k string) bool {
	for _, n := range known {
		if k == n {
			return true
		}
	}
	return false
}

// splitList splits a comma-separated annotation value; spaces around an
// entry are dropped.
func splitList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// containerPaths checks what only a container path can get wrong, and
// returns the entries relative to the container's root, as the config
// writes paths relative to its root.
func containerPaths(key, v string) (rel []string, errs []error) {
	const fix = "write absolute container paths, comma-separated: /etc/secret,/data/keys"
	for _, p := range splitList(v) {
		switch {
		case p == "":
			errs = append(errs, &AnnotationError{Annotation: key, Problem: "has an empty entry", Fix: fix})
		case !strings.HasPrefix(p, "/"):
			errs = append(errs, &AnnotationError{Annotation: key, Problem: fmt.Sprintf("%q is not an absolute container path", p), Fix: fix})
		case strings.Trim(p, "/") == "":
			errs = append(errs, &AnnotationError{Annotation: key, Problem: "/ is the whole container", Fix: fix})
		case hasDotDot(p):
			errs = append(errs, &AnnotationError{Annotation: key, Problem: fmt.Sprintf("%q has a .. component", p), Fix: fix})
		case spec.IsPattern(p):
			errs = append(errs, &AnnotationError{Annotation: key, Problem: fmt.Sprintf("%q is a pattern, which cordon-oci cannot mount over", p),
				Fix: "list the literal paths: " + fix})
		default:
			rel = append(rel, strings.TrimLeft(p, "/"))
		}
	}
	return rel, errs
}

// parseWithSpec hands the lists to the config's own parser as the config
// file that says the same, so that the syntax and the messages are the
// config's.
func parseWithSpec(a map[string]string, rootfs string, deny, protect []string) (Boundary, error) {
	sb := map[string]any{"root": rootfs, "protect_defaults": false}
	if len(deny) > 0 {
		sb["deny"] = deny
	}
	if len(protect) > 0 {
		sb["protect"] = protect
	}
	if v, ok := a[AnnotationNetworkAllow]; ok {
		sb["network"] = map[string]any{"allow": splitList(v)}
	}
	doc := map[string]any{"sandbox": sb, "audit_required": false}
	if v, ok := a[AnnotationAudit]; ok {
		if !filepath.IsAbs(v) {
			return Boundary{}, &AnnotationError{Annotation: AnnotationAudit, Problem: fmt.Sprintf("%q is not an absolute host path", v),
				Fix: "give the absolute host path of the audit log, below the runtime's audit folder (--audit-dir): /var/log/cordon-oci/audit.jsonl"}
		}
		doc["audit"] = v
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return Boundary{}, fmt.Errorf("encode the annotations as a config: %w", err)
	}
	cfg, err := spec.Parse(data, rootfs, "(the bundle's run.cordon annotations)")
	if err != nil {
		return Boundary{}, perAnnotation(err)
	}
	b := Boundary{Allow: cfg.Sandbox.Network.Allow, Audit: cfg.Audit}
	b.Deny = inContainer(cfg.Sandbox.Deny, rootfs)
	b.Protect = inContainer(cfg.Sandbox.Protect, rootfs)
	return b, nil
}

// inContainer turns the config's host paths under rootfs back into
// container paths.
func inContainer(hostPaths []string, rootfs string) []string {
	var out []string
	root := filepath.Clean(rootfs)
	for _, p := range hostPaths {
		out = append(out, "/"+strings.TrimLeft(strings.TrimPrefix(p, root), "/"))
	}
	return out
}

// hasDotDot reports whether p has a ".." component: a container path is
// resolved inside the container's root, never lexically outside it.
func hasDotDot(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return true
		}
	}
	return false
}

// fieldAnnotations maps the config's fields back to the annotations that
// gave them.
var fieldAnnotations = map[string]string{
	"sandbox.deny":          AnnotationDeny,
	"sandbox.protect":       AnnotationProtect,
	"sandbox.network.allow": AnnotationNetworkAllow,
	"sandbox.network":       AnnotationNetworkAllow,
	"audit":                 AnnotationAudit,
}

// perAnnotation turns the config's field errors into one AnnotationError
// each, named by its annotation (the config's YAML lines mean nothing
// here); each still matches spec.ErrInvalidConfig.
func perAnnotation(err error) error {
	var out []error
	for _, fe := range fieldErrors(err) {
		key := annotationPrefix + "*"
		field := fe.Field
		if i := strings.IndexByte(field, '['); i >= 0 {
			field = field[:i]
		}
		if k, ok := fieldAnnotations[field]; ok {
			key = k
		}
		out = append(out, &AnnotationError{Annotation: key, Problem: fe.Problem, Fix: fe.Fix, Err: fe})
	}
	if len(out) == 0 {
		return &AnnotationError{Annotation: annotationPrefix + "*", Problem: err.Error(), Err: err}
	}
	return errors.Join(out...)
}

// fieldErrors collects every *spec.FieldError in err's tree.
func fieldErrors(err error) []*spec.FieldError {
	if fe, ok := err.(*spec.FieldError); ok {
		return []*spec.FieldError{fe}
	}
	var out []*spec.FieldError
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, fieldErrors(e)...)
		}
	case interface{ Unwrap() error }:
		out = fieldErrors(u.Unwrap())
	}
	return out
}
