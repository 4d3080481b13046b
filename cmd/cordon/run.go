package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/containerd/console"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/runner"
)

func init() {
	register(command{name: "run", summary: "run a command inside the sandbox", run: runMain})
}

const runUsage = "[--config F] [--profile P] [--worker W]... [--mount SRC[:DST][:ro]]... [--network] [--readonly] [--timeout D] [--memory M] [--pids N] [--attach PATH]... [--audit FILE] [--cwd DIR] [--report FILE] [--json] -- CMD [ARG...]"

func runMain(args []string) int {
	runner.PrewarmCgroups()
	fs := newFlagSet("run", runUsage)
	var sf sandboxFlags
	var of overrideFlags
	var ag agentFlags
	sf.register(fs)
	of.register(fs)
	ag.register(fs)
	report := fs.String("report", "", "write the result as JSON to `FILE`")
	jsonOut := fs.Bool("json", false, "write the result as JSON to stderr")
	cwd := fs.String("cwd", "", "run the command in `DIR`, a sandbox path (relative: under the workspace); default: the current directory when the sandbox shows it, else the workspace")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "cordon run: no command given; fix: cordon run [flags] -- CMD [ARG...]")
		return exitConfig
	}
	s, code := ag.prepare(&sf, &of, cordon.FrontEndCLI)
	if code != exitOK {
		return code
	}
	if err := cordon.CheckBackend(); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	dir, code := workDir(s, *cwd)
	if code != exitOK {
		return code
	}
	opts := []cordon.RunOption{cordon.Stdin(os.Stdin), cordon.Stdout(os.Stdout), cordon.Stderr(os.Stderr), cordon.Notify(sigs), cordon.Dir(dir)}
	if c, err := console.ConsoleFromFile(os.Stdin); err == nil {
		if _, err := console.ConsoleFromFile(os.Stdout); err == nil {
			opts = append(opts, cordon.Terminal(func() (uint16, uint16, bool) {
				ws, err := c.Size()
				return ws.Width, ws.Height, err == nil
			}))
			if err := c.SetRaw(); err == nil {
				defer func() { _ = c.Reset() }()
			}
		}
	}

	res, err := s.Run(context.Background(), argv, opts...)
	if err != nil && !errors.Is(err, cordon.ErrNotRecorded) {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	switch res.FailureType {
	case cordon.FailureNone, cordon.FailureProcessError:
	default:
		fmt.Fprintf(os.Stderr, "cordon: %s: %s\n", res.FailureType, res.FailureDetail)
	}
	if *report != "" || *jsonOut {
		data, _ := json.MarshalIndent(res, "", "  ")
		data = append(data, '\n')
		if *report != "" {
			if err := os.WriteFile(*report, data, 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "cordon: write report: %v\n", err)
			}
		}
		if *jsonOut {
			os.Stderr.Write(data)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	return res.ExitCode
}

// workDir is the command's working directory: --cwd, checked, or the
// current directory when the sandbox shows it, else the workspace (with a
// note saying so).
func workDir(s *cordon.Sandbox, flag string) (string, int) {
	if flag != "" {
		dir, err := s.CheckDir(flag)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cordon run: --cwd %s: %v; fix: give a directory inside the sandbox (cordon explain lists them)\n", flag, err)
			return "", exitConfig
		}
		return dir, exitOK
	}
	wd, _ := os.Getwd()
	dir, inside := s.WorkDir(wd)
	if !inside && wd != "" {
		fmt.Fprintf(os.Stderr, "cordon: note: the current directory %s is not in the sandbox; the command runs in %s (--cwd DIR to choose)\n", wd, dir)
	}
	return dir, exitOK
}
