package spec_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cordon-run/cordon/spec"
)

// Load a project config, then derive the sandbox of a worker that asks for a
// read-only view of the source tree.
func ExampleDerive() {
	cfg, err := spec.Load("../testdata/good/zones.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := spec.ParseWorker([]byte("sandbox: {restrict: src, readonly: true}"), "reviewer", "reviewer.worker.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	child, err := spec.Derive(&cfg.Sandbox, w, cfg.Delegation.MaxDepth)
	if err != nil {
		fmt.Println(err)
		return
	}
	rel, _ := filepath.Rel(cfg.Sandbox.Root, child.Root)
	fmt.Println("root:", rel, "readonly:", child.Readonly)
	fmt.Println("network:", child.Network)
	fmt.Println("limits:", child.Limits)
	fmt.Println("lineage:", strings.Join(child.Lineage, " > "))

	// Asking for more than the parent has is refused, naming the rule.
	greedy, _ := spec.ParseWorker([]byte("sandbox: {network: true, zones: [{name: data, mode: rw}]}"), "greedy", "greedy.worker.yaml")
	_, err = spec.Derive(&cfg.Sandbox, greedy, cfg.Delegation.MaxDepth)
	fmt.Println(errors.Is(err, spec.ErrWidening))
	fmt.Println(err)
	// Output:
	// root: src readonly: true
	// network: off
	// limits: timeout=10m0s memory=2GiB pids=512
	// lineage: reviewer
	// true
	// worker "greedy": rule zone-mode: asks rw on zone "data" but the parent has it read-only; ask for mode ro
	// worker "greedy": rule network-allow: asks for unrestricted network access but the parent allows only: *.pypi.org, github.com:443; ask for allow: [...] within that list
}

func ExampleParse() {
	_, err := spec.Parse([]byte(`
sandbox:
  mounts:
    - {source: ., target: cache}
  limits: {memory: 0}
`), ".", "cordon.yaml")
	fmt.Println(err)
	// Output:
	// invalid config cordon.yaml (2 problems):
	// sandbox.mounts[0].target (line 4): "cache" must be absolute; fix: give an absolute path inside the sandbox, or leave target out to mount at the source's own path
	// sandbox.limits.memory (line 5): must be above zero, not "0"; fix: give a size such as "512MiB", or remove the key for no limit
}

func ExampleParseBytes() {
	for _, s := range []string{"4096", "512MiB", "1.5GiB", "100MB"} {
		n, _ := spec.ParseBytes(s)
		fmt.Println(s, n)
	}
	// Output:
	// 4096 4096
	// 512MiB 536870912
	// 1.5GiB 1610612736
	// 100MB 100000000
}
