package main

import (
	"encoding/json"
	"testing"
)

// TestExplainJSON: explain --json prints what the table shows as one JSON
// object: the config, the sandbox (its workspace first), the backend.
func TestExplainJSON(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, dir, "explain", "--json", "--profile", "strict")
	var e struct {
		Config  string `json:"config"`
		Sandbox struct {
			Paths []struct {
				Path, Access, Origin string
			} `json:"paths"`
			Network string `json:"network"`
		} `json:"sandbox"`
		Backend string `json:"backend"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &e) != nil {
		t.Fatalf("explain --json: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if e.Config != "profile:strict" || len(e.Sandbox.Paths) == 0 || e.Sandbox.Paths[0].Path != dir ||
		e.Sandbox.Paths[0].Origin != "workspace" || e.Sandbox.Network != "off" || e.Backend == "" {
		t.Errorf("explain --json = %+v", e)
	}
}
