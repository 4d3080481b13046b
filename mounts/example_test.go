package mounts_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// Example builds the table of a workspace with a deny and a protect path,
// then uses the file tools the way an agent would.
func Example() {
	ws, err := os.MkdirTemp("", "cordon-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(ws)
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN=secret"), 0o600); err != nil {
		panic(err)
	}
	tab, err := mounts.New(&spec.Sandbox{
		Root:    ws,
		Deny:    []string{filepath.Join(ws, ".env")},
		Protect: []string{filepath.Join(ws, ".git/hooks")},
		System:  spec.System{Kind: spec.SystemNone},
	})
	if err != nil {
		panic(err)
	}

	// Relative paths are relative to the workspace; missing parents are created.
	if err := tab.Write("notes/todo.txt", "ship it"); err != nil {
		panic(err)
	}
	text, _ := tab.Read("notes/todo.txt", 0)
	fmt.Println(text)

	_, err = tab.Read(".env", 0)
	fmt.Println("denied:", errors.Is(err, mounts.ErrDenied))

	err = tab.Write(".git/hooks/pre-commit", "#!/bin/sh")
	var pe *mounts.PathError
	if errors.As(err, &pe) {
		fmt.Println("read-only:", errors.Is(err, mounts.ErrReadOnly), "rule:", pe.Rule)
	}

	files, _ := tab.List(ws, "**/*.txt")
	for _, f := range files {
		fmt.Println(strings.TrimPrefix(f, ws))
	}
	// Output:
	// ship it
	// denied: true
	// read-only: true rule: protect
	// /notes/todo.txt
}
