//go:build (linux && cgo && !noseccomp) || darwin

// The example runs commands: on Linux only a binary built with seccomp
// support can (without it every run fails closed), so a plain `go test`
// leaves it out.

package cordon_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// The flow of a harness: load the project, derive a worker, use the file
// tools, run a command with streaming output, read the typed result.
func Example() {
	// A project: a workspace with a cordon.yaml and a worker that may only
	// see src/.
	dir, err := os.MkdirTemp("", "cordon-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	must(os.WriteFile(filepath.Join(dir, "cordon.yaml"), []byte("sandbox:\n  root: .\n  limits: {timeout: 30s}\n"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "src"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "src.worker.yaml"), []byte("name: editor\nsandbox:\n  restrict: src\n"), 0o644))

	// 0. Trust the project config once, after reviewing it, as `cordon trust`
	// does: a discovered config is used only while its content is trusted.
	// (This example keeps its trust store in a temporary folder.)
	must(os.Setenv("CORDON_TRUST_FILE", filepath.Join(dir, "..", filepath.Base(dir)+".trusted")))
	defer os.Remove(filepath.Join(dir, "..", filepath.Base(dir)+".trusted"))
	must(spec.Trust(filepath.Join(dir, "cordon.yaml")))

	// 1. Load the project config (found upwards from dir, as git finds .git).
	p, err := cordon.LoadProject(dir)
	if err != nil {
		log.Fatal(err)
	}
	// 2. Derive a worker: the project's sandbox narrowed to src/.
	w, err := p.Worker(filepath.Join(dir, "src.worker.yaml"))
	if err != nil {
		log.Fatal(err)
	}
	// 3. The file tools and the query API.
	files := w.Files()
	must(files.Write("hello.txt", "hello from the worker\n"))
	err = files.Write(filepath.Join(dir, "cordon.yaml"), "sandbox: {}\n")
	fmt.Println("write outside src refused:", errors.Is(err, mounts.ErrOutsideSandbox))

	// 4. Run a command, streaming its output.
	res, err := w.Run(context.Background(), []string{"cat", "hello.txt"}, cordon.Stdout(os.Stdout))
	if err != nil {
		log.Fatal(err)
	}
	// 5. Read the typed result.
	fmt.Println("exit:", res.ExitCode, "failure:", res.FailureType)

	res, err = w.Run(context.Background(), []string{"sh", "-c", "echo x > /usr/cordon-example"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("failure:", res.FailureType, "blocked:", res.BlockedPath)
	// Output:
	// write outside src refused: true
	// hello from the worker
	// exit: 0 failure: none
	// failure: sandbox_denied blocked: /usr/cordon-example
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
