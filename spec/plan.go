package spec

import (
	"encoding/json"
	"errors"
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Plan is everything a backend needs to build one sandbox, from one
// translation: the spec, the host paths the guards rely on, and what is not
// enforced. Nothing is created on the host for it: a deny or protect path
// missing at start has no mount; the runner's broker refuses creating it.
type Plan struct {
	// Spec is the OCI runtime spec.
	Spec *specs.Spec
	// Guarded are the host paths the guards rely on (see GuardedPaths).
	Guarded []string
	// Unenforced are the keys of the parts of the sandbox that are not
	// enforced, as AnnotationUnenforced lists them.
	Unenforced []string
}

// NewPlan translates sb into the plan of a run of proc: ToOCI's spec, the
// guarded paths and what is not enforced. A backend calls it once.
func NewPlan(sb *Sandbox, proc Process, ro RunOptions, opts ...Opt) (*Plan, error) {
	return newPlan(sb, proc, ro, currentHost(ro.Host), opts...)
}

func newPlan(sb *Sandbox, proc Process, ro RunOptions, h hostInfo, opts ...Opt) (*Plan, error) {
	if sb == nil {
		return nil, errors.New("oci: no sandbox")
	}
	// Deny and protect hold at every sandbox path of the same host file.
	sb = WithAliases(sb)
	s, err := toOCI(sb, proc, ro, h, opts...)
	if err != nil {
		return nil, err
	}
	p := &Plan{Spec: s, Guarded: GuardedPaths(sb)}
	if u, ok := s.Annotations[AnnotationUnenforced]; ok {
		if err := json.Unmarshal([]byte(u), &p.Unenforced); err != nil {
			return nil, fmt.Errorf("annotations: %w", err)
		}
	}
	return p, nil
}
