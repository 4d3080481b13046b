package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/containerd/console"

	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/runner"
)

func init() {
	register(command{name: "run", summary: "run a command inside the sandbox", run: runMain})
}

const runUsage = "[--config F] [--profile P] [--worker W]... [--mount SRC[:DST][:ro]]... [--network] [--readonly] [--timeout D] [--memory M] [--pids N] [--attach PATH]... [--audit FILE] [--report FILE] [--json] -- CMD [ARG...]"

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
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "cordon run: no command given; fix: cordon run [flags] -- CMD [ARG...]")
		return exitConfig
	}
	sb, alog, code := ag.prepare(&sf, &of, audit.ViaCLI)
	if code != exitOK {
		return code
	}
	r, err := newRunner()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	arun, code := startRun(alog, sb, argv)
	if code != exitOK {
		return code
	}

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGWINCH)
	defer signal.Stop(sigs)

	req := runner.Request{
		Sandbox: sb,
		Args:    argv,
		Stdin:   os.Stdin,
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
		Signals: sigs,
	}
	if c, err := console.ConsoleFromFile(os.Stdin); err == nil {
		if _, err := console.ConsoleFromFile(os.Stdout); err == nil {
			req.TTY = true
			req.TermSize = func() (uint16, uint16, bool) {
				ws, err := c.Size()
				return ws.Width, ws.Height, err == nil
			}
			if err := c.SetRaw(); err == nil {
				defer func() { _ = c.Reset() }()
			}
		}
	}

	res, err := r.Run(context.Background(), req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		finishRun(arun, setupResult(err))
		return exitSetup
	}
	switch res.FailureType {
	case runner.FailureNone, runner.FailureProcessError:
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
	if code := finishRun(arun, res); code != exitOK {
		return code
	}
	return res.ExitCode
}
