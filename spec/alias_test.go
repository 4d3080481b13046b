package spec

import (
	"slices"
	"strings"
	"testing"
)

// TestWithAliases: every sandbox path that reaches a deny or protect path's
// host file is added; the sandbox itself is not changed (issue 9, item 4).
func TestWithAliases(t *testing.T) {
	ws, home := "/nonexistent-cordon/home/u/proj", "/nonexistent-cordon/home/u"
	sb := &Sandbox{
		Root: ws,
		Mounts: []Mount{
			{Source: home, Target: "/hosthome", Readonly: true},
			{Source: ws, Target: "/alias"},
			{Source: home + "/.ssh/keys", Target: "/keys"},
			{Source: "/nonexistent-cordon/other", Target: "/other"},
		},
		Deny:    []string{home + "/.ssh", ws + "/.env", "/hosthome/.aws"},
		Protect: []string{ws + "/.git/hooks"},
	}
	got := WithAliases(sb)
	for _, want := range []string{home + "/.ssh", "/hosthome/.ssh", "/keys", ws + "/.env", "/alias/.env", "/hosthome/proj/.env",
		"/hosthome/.aws"} {
		if !slices.Contains(got.Deny, want) {
			t.Errorf("deny lacks %s: %v", want, got.Deny)
		}
	}
	for _, want := range []string{ws + "/.git/hooks", "/alias/.git/hooks", "/hosthome/proj/.git/hooks"} {
		if !slices.Contains(got.Protect, want) {
			t.Errorf("protect lacks %s: %v", want, got.Protect)
		}
	}
	for _, p := range append(slices.Clone(got.Deny), got.Protect...) {
		if within(p, "/other") {
			t.Errorf("%s is no alias", p)
		}
	}
	if len(sb.Deny) != 3 || len(sb.Protect) != 1 {
		t.Errorf("the sandbox was changed: %v %v", sb.Deny, sb.Protect)
	}
}

// TestWithAliasesHostSecrets: a zone that shows a host secret (a mount of
// /etc, or of the secret itself) gets the secret denied at its own path,
// whatever system says; a zone that does not show one gets nothing.
func TestWithAliasesHostSecrets(t *testing.T) {
	secrets := HostSecrets()
	if len(secrets) == 0 {
		t.Skip("this host has none of the secret files")
	}
	s := secrets[0]
	sb := &Sandbox{System: System{Kind: SystemNone}, Mounts: []Mount{
		{Source: "/etc", Target: "/hostetc", Readonly: true},
		{Source: s, Target: "/one", Readonly: true},
		{Source: "/nonexistent-cordon/other", Target: "/other"},
	}}
	got := WithAliases(sb)
	for _, want := range []string{"/hostetc" + strings.TrimPrefix(s, "/etc"), "/one"} {
		if !slices.Contains(got.Deny, want) {
			t.Errorf("deny lacks %s: %v", want, got.Deny)
		}
	}
	for _, p := range got.Deny {
		if within(p, "/other") || p == s {
			t.Errorf("%s is no alias of a secret shown by a mount", p)
		}
	}
}
