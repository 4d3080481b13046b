//go:build linux && cgo && !noseccomp

package cordon_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/spec"
)

// An agent works in an overlay; its writes reach the workspace only when
// applied.
func ExampleInOverlay() {
	tmp, err := os.MkdirTemp("", "cordon-overlay-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ws := filepath.Join(tmp, "ws")
	must(os.Mkdir(ws, 0o755))
	must(os.Setenv("CORDON_OVERLAY_DIR", filepath.Join(tmp, "overlays")))
	defer os.Unsetenv("CORDON_OVERLAY_DIR")
	cfg, err := spec.Parse([]byte("sandbox:\n  root: .\n"), ws, "example")
	must(err)
	sb, err := cordon.NewProject(cfg).Sandbox()
	must(err)

	res, err := sb.Run(context.Background(), []string{"sh", "-c", "echo done > result.txt"}, cordon.InOverlay("agent1"))
	must(err)
	_, err = os.Stat(filepath.Join(ws, "result.txt"))
	fmt.Println(res.Overlay, res.OverlayChanges, "on the host before apply:", err == nil)

	changes, err := sb.ApplyOverlay("agent1", false)
	must(err)
	data, _ := os.ReadFile(filepath.Join(ws, "result.txt"))
	fmt.Printf("applied %d change(s): %s", len(changes), data)

	st, err := cordon.OverlayStore()
	must(err)
	must(st.Discard("agent1"))
	// Output:
	// agent1 [result.txt] on the host before apply: false
	// applied 1 change(s): done
}
