package overlay

import (
	"github.com/cordon-run/cordon/spec"
)

// Rules are the deny and protect entries Apply holds every change to:
// the sandbox's own, with its aliases (spec.WithAliases), matched by the
// same compiled rules the runner's broker uses (spec.CompileRule), so an
// overlay lands nothing a direct run could not have written.
type Rules struct {
	deny, protect []rule
}

type rule struct {
	text  string
	match spec.Rule
}

// RulesOf compiles sb's deny and protect entries.
func RulesOf(sb *spec.Sandbox) Rules {
	var r Rules
	if sb == nil {
		return r
	}
	a := spec.WithAliases(sb)
	for _, d := range a.Deny {
		r.deny = append(r.deny, rule{"deny " + d, spec.CompileRule(d)})
	}
	for _, p := range a.Protect {
		r.protect = append(r.protect, rule{"protect " + p, spec.CompileRule(p)})
	}
	return r
}
