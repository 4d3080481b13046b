package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cordon-run/cordon/internal/hostfile"
)

func init() {
	register(command{name: "init", summary: "write a commented starter cordon.yaml in the current directory", run: initMain})
}

// starterConfig is what `cordon init` writes: the built-in workspace
// profile spelled out, with the other settings commented.
const starterConfig = `# cordon.yaml: the sandbox of commands run from this folder or below
# (cordon run, cordon mcp, cordon session start). Relative paths are relative
# to this file's folder. docs/config.md in cordon's repository lists every field.
#
# cordon uses a discovered cordon.yaml only once you trust it: review this
# file, then run ` + "`cordon trust`" + `. Any change ends the trust.
sandbox:
  root: .                # the workspace: read-write for commands
  system: host           # the host's /usr, /bin, /lib, /etc, read-only
  network: false         # or true, or {allow: ["github.com:443", "*.pypi.org"]}
  deny: [.env]           # hidden from commands and the file tools
  # protect: [secrets/]  # readable, never writable; adds to the built-in
  #                      # list (.git/hooks, .git/config, cordon.yaml, shell
  #                      # rc files, editor and agent folders), which
  #                      # protect_defaults: false leaves out
  # mounts:              # more host folders
  #   - source: ~/.cache/pip
  #     target: /cache
  #     readonly: true
  limits:
    timeout: 10m
    # memory: 2GiB
    # pids: 512
    # file_size: 1GiB
    # cpus: 2
    # output: 1MiB       # per stream; the report says output_truncated
  # env: {pass: [PATH, LANG, TERM], set: {FOO: bar}}
# audit: .cordon/audit.jsonl   # every run and refusal, as JSON lines
`

func initMain(args []string) int {
	flags := newFlagSet("init", "[--force]")
	force := flags.Bool("force", false, "overwrite an existing cordon.yaml")
	if err := flags.Parse(args); err != nil {
		return exitConfig
	}
	if flags.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "cordon init: takes no arguments; fix: run it in the folder that is the workspace")
		return exitConfig
	}
	path, err := filepath.Abs("cordon.yaml")
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon init: %v\n", err)
		return exitConfig
	}
	// O_EXCL never follows a link; --force opens as cordon opens every
	// file it writes for its caller (a link a sandbox could have planted,
	// a FIFO or a hard link at cordon.yaml is refused, never followed).
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if *force {
		f, err = hostfile.Open(path, false, 0o644)
	}
	if errors.Is(err, fs.ErrExist) {
		fmt.Fprintf(os.Stderr, "cordon init: %s exists; fix: edit it, or cordon init --force to replace it\n", path)
		return exitConfig
	}
	if err == nil {
		_, err = f.WriteString(starterConfig)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon init: %v\n", err)
		return exitSetup
	}
	fmt.Printf("wrote %s; review it, then run: cordon trust\n", path)
	return exitOK
}
