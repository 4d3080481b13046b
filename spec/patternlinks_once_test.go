package spec

import (
	"reflect"
	"testing"
)

// checkPlanWithLinks: the plan of sb built with the entries a walk found
// before (RunOptions.Links) is the plan built by walking, and is built
// without a walk; links found for another sandbox (one more deny
// pattern, a read-only workspace) or other system directories are not
// taken: that plan walks, and is that sandbox's own. TestWithPatternLinks
// calls it on each of its link trees.
func checkPlanWithLinks(t *testing.T, sb *Sandbox, system []string) {
	t.Helper()
	h := currentHost(nil)
	h.systemDirs = func(*Sandbox) []string { return system }
	plan := func(sb *Sandbox, links *Links) (*Plan, bool) {
		t.Helper()
		ro := ociRun()
		ro.Links = links
		n := LinkWalks()
		p, err := newPlan(sb, ociProc(), ro, h)
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		return p, LinkWalks() != n
	}
	links, err := findLinks(sb, system)
	if err != nil {
		t.Fatal(err)
	}
	walked, _ := plan(sb, nil)
	given, didWalk := plan(sb, links)
	if didWalk {
		t.Error("the plan walked with the links of its own sandbox given")
	}
	if !reflect.DeepEqual(walked, given) {
		t.Errorf("plan with links given:\n%+v\nwant the walked plan:\n%+v", given.Aliased, walked.Aliased)
	}

	others := map[string]func(*Sandbox){
		"one more deny pattern": func(o *Sandbox) { o.Deny = append(o.Deny, o.Root+"/**/*.key") },
		"read-only workspace":   func(o *Sandbox) { o.Readonly = !o.Readonly },
		"one protect entry less": func(o *Sandbox) {
			if len(o.Protect) > 0 {
				o.Protect = o.Protect[1:]
			} else {
				o.Protect = []string{o.Root + "/**/.git/hooks"}
			}
		},
	}
	for name, change := range others {
		o := sb.Clone()
		change(o)
		own, ownWalked := plan(o, nil)
		got, didWalk := plan(o, links)
		if ownWalked && !didWalk {
			t.Errorf("%s: the plan took links found for another sandbox without walking", name)
		}
		if !reflect.DeepEqual(own, got) {
			t.Errorf("%s: plan with another sandbox's links:\n%+v\nwant its own:\n%+v", name, got.Aliased, own.Aliased)
		}
	}
	// Other system directories: walked again.
	if len(system) > 0 {
		h2 := h
		h2.systemDirs = func(*Sandbox) []string { return nil }
		ro := ociRun()
		ro.Links = links
		n := LinkWalks()
		if _, err := newPlan(sb, ociProc(), ro, h2); err == nil && LinkWalks() == n {
			t.Error("the plan took links found for other system directories without walking")
		}
	}
}
