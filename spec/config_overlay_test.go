package spec

import (
	"errors"
	"strings"
	"testing"
)

// TestWorkspaceModeConfig: workspace_mode: overlay sets the sandbox's
// overlay, named by overlay or after the workspace folder; direct (or no
// key) leaves it empty.
func TestWorkspaceModeConfig(t *testing.T) {
	fixtureHome(t)
	tests := []struct{ name, yml, want string }{
		{"no key is direct", "sandbox: {root: project}", ""},
		{"direct", "sandbox: {root: project, workspace_mode: direct}", ""},
		{"overlay named after the workspace", "sandbox: {root: project, workspace_mode: overlay}", "project"},
		{"overlay with a name", "sandbox: {root: project, workspace_mode: overlay, overlay: agent-1}", "agent-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse(t, tt.yml)
			if err != nil {
				t.Fatal(err)
			}
			if c.Sandbox.OverlayName != tt.want {
				t.Errorf("OverlayName = %q, want %q", c.Sandbox.OverlayName, tt.want)
			}
		})
	}
}

// TestWorkspaceModeRejects: every bad value is refused naming the key and
// the value, all problems at once.
func TestWorkspaceModeRejects(t *testing.T) {
	fixtureHome(t)
	tests := []struct {
		name, yml string
		want      map[string]string // field: text of its problem
	}{
		{"unknown mode", "sandbox: {root: project, workspace_mode: cow}", map[string]string{"sandbox.workspace_mode": `"cow" is not a workspace mode`}},
		{"mode and name both bad", `sandbox: {root: project, workspace_mode: cow, overlay: "a b"}`, map[string]string{
			"sandbox.workspace_mode": `"cow"`, "sandbox.overlay": `"a b" is not an overlay name`}},
		{"name with a slash", "sandbox: {root: project, workspace_mode: overlay, overlay: ../x}", map[string]string{"sandbox.overlay": `"../x"`}},
		{"name without overlay mode", "sandbox: {root: project, overlay: x}", map[string]string{"sandbox.overlay": "workspace_mode is direct"}},
		{"overlay of a read-only workspace", "sandbox: {root: project, readonly: true, workspace_mode: overlay}", map[string]string{"sandbox.workspace_mode": "readonly: true"}},
		{"mode not a string", "sandbox: {root: project, workspace_mode: [overlay]}", map[string]string{"sandbox.workspace_mode": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse(t, tt.yml)
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", c.Sandbox)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("not ErrInvalidConfig: %v", err)
			}
			for field, want := range tt.want {
				found := false
				for _, p := range problems(err) {
					if p.Field == field && strings.Contains(p.Problem, want) && p.Fix != "" {
						found = true
					}
				}
				if !found {
					t.Errorf("no problem on %s containing %q with a fix; got:\n%v", field, want, err)
				}
			}
		})
	}
}

// TestDefaultOverlayName: a workspace folder's name, made a valid overlay
// name.
func TestDefaultOverlayName(t *testing.T) {
	for in, want := range map[string]string{
		"/home/u/proj":                  "proj",
		"/home/u/my project":            "my-project",
		"/home/u/.hidden":               "hidden",
		"/home/u/ünï":                   "n",
		"/":                             "workspace",
		"/x/" + strings.Repeat("a", 80): strings.Repeat("a", 64),
	} {
		got := DefaultOverlayName(in)
		if got != want || !ValidOverlayName(got) {
			t.Errorf("DefaultOverlayName(%q) = %q (valid %v), want %q", in, got, ValidOverlayName(got), want)
		}
	}
}

// TestDeriveOverlayName: a worker with a writable workspace keeps the
// overlay (a narrower one is then refused at run, never direct); one
// with no workspace or a read-only one has nothing to overlay.
func TestDeriveOverlayName(t *testing.T) {
	tests := []struct {
		name string
		req  *WorkerRequest
		want string
	}{
		{"same workspace", &WorkerRequest{}, "agent"},
		{"read-only", &WorkerRequest{Readonly: true}, ""},
		{"no workspace", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newDeriveFixture(t)
			fx.parent.OverlayName = "agent"
			c, err := Derive(fx.parent, &Worker{Name: "w", Sandbox: tt.req}, 5)
			if err != nil {
				t.Fatal(err)
			}
			if c.OverlayName != tt.want {
				t.Errorf("OverlayName = %q, want %q", c.OverlayName, tt.want)
			}
		})
	}
}
