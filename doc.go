// Package cordon is the Go API for agent harnesses: it runs commands and
// file operations inside a declared sandbox boundary, so a model can be
// given real tools without being given the machine.
//
// Each step of a harness is one call:
//
//	cordon.Init()                             // first thing in main
//	p, err := cordon.LoadProject(dir)         // cordon.yaml found upwards, else the workspace profile
//	w, err := p.Worker("fmt.worker.yaml")     // a child: parent ∩ request, never wider
//	err = w.Files().Write("src/a.go", text)   // file tools and the query API
//	res, err := w.Run(ctx, []string{"gofmt", "-l", "."}, cordon.Stdout(os.Stdout))
//	if res.FailureType == cordon.FailureSandboxDenied { ... res.FailureDetail says what IS allowed ... }
//
// Init must be the first call in main (and in TestMain) of every program
// that runs commands: on Linux the backend starts each sandbox by
// re-executing the program as the container's init, and Init is where that
// re-executed process takes over. It returns at once in the parent.
//
// A worker asks for a subtree, zones, read-only access, less network or
// lower limits; asking for more than its parent allows is an error matching
// ErrWidening whose message names the rule. Attach passes files the
// parent can read to the child, read-only (AttachmentPolicy caps them).
//
// Refusals are typed errors (ErrOutsideSandbox, ErrReadOnly, ErrDenied,
// ErrSuffix, ErrTooLarge) whose messages say
// what IS allowed. With `audit: FILE` in the config (or WithAuditFile) every
// run and every refusal is appended to a JSON-lines log; a
// run whose start cannot be recorded is not started.
//
// This package is the one composition root of a run: the cordon command
// and its MCP server are front ends over it, so the backend choice, the
// guarding of cordon's control files, attachments and the audit record
// around every run and every refusal are the same through every door. A
// harness needs this package only: Result, FailureType and the sentinels
// it matches are aliased here.
//
// On Linux commands run through runc's libcontainer (package runner); on
// macOS through Seatbelt (package darwin). Elsewhere Run fails with
// ErrUnsupported, while the file tools and the query API still work.
package cordon
