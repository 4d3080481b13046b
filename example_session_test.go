//go:build linux && cgo && !noseccomp

package cordon_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/spec"
)

// A warm session: the sandbox is built once, then every command is forked
// from it. Files persist between commands; environment, working directory
// and processes do not.
func ExampleSandbox_StartSession() {
	dir, err := os.MkdirTemp("", "cordon-session-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg, err := spec.Profile("workspace", dir)
	if err != nil {
		log.Fatal(err)
	}
	sb, err := cordon.NewProject(cfg).Sandbox()
	if err != nil {
		log.Fatal(err)
	}
	s, err := sb.StartSession(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for _, args := range [][]string{
		{"sh", "-c", "echo kept > note.txt; export LOST=1"},
		{"sh", "-c", "cat note.txt; echo ${LOST:-fresh environment}"},
	} {
		res, err := s.Exec(context.Background(), args, cordon.Stdout(os.Stdout))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("exit", res.ExitCode, res.FailureType)
	}
	// Output:
	// exit 0 none
	// kept
	// fresh environment
	// exit 0 none
}
