package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/containerd/console"

	"github.com/cordon-run/cordon"
)

func init() {
	register(command{name: "run", summary: "run a command inside the sandbox", run: runMain})
}

const runUsage = "[--config F] [--profile P] [--worker W]... [--mount SRC[:DST][:ro]]... [--network] [--allow HOST]... [-e NAME[=VALUE]]... [--readonly] [--timeout D] [--memory M] [--pids N] [--attach PATH]... [--audit FILE] [--cwd DIR] [--overlay NAME] [--report FILE] [--json] [--sandbox] -- CMD [ARG...]"

func runMain(args []string) int {
	cordon.Prewarm()
	// The report is opened before anything else, so that every invocation
	// that names one writes one, a refusal included (a stale report must
	// not survive), and before the sandbox exists, so that nothing the
	// command does to the path can redirect or block the write.
	rep, code := openReport(args)
	if code != exitOK {
		return code
	}
	refuse := func(code int, err error) int {
		if werr := rep.Write(cordon.Refused(err)); werr != nil {
			fmt.Fprintf(os.Stderr, "cordon: write report: %v\n", werr)
		}
		return code
	}
	fs := newFlagSet("run", runUsage)
	var sf sandboxFlags
	var of overrideFlags
	var ag agentFlags
	sf.register(fs)
	of.register(fs)
	ag.register(fs)
	report := fs.String("report", "", "write the result as JSON to `FILE`")
	jsonOut := fs.Bool("json", false, "write the result as JSON to stderr")
	overlayName := fs.String("overlay", "", "run copy-on-write in the overlay `NAME`: writes land in it, not in the workspace (cordon diff/apply/discard NAME)")
	withSandbox := fs.Bool("sandbox", false, "include the sandbox's description (every path, ~7 KB) in the --json and --report result")
	cwd := fs.String("cwd", "", "run the command in `DIR`, a sandbox path (relative: under the workspace); default: the current directory when the sandbox shows it, else the workspace")
	if err := fs.Parse(args); err != nil {
		return refuse(exitConfig, fmt.Errorf("cordon run: %w", err))
	}
	argv := fs.Args()
	if len(argv) == 0 {
		err := errors.New("cordon run: no command given; fix: cordon run [flags] -- CMD [ARG...]")
		fmt.Fprintln(os.Stderr, err)
		return refuse(exitConfig, err)
	}
	ag.report = *report
	s, err := ag.open(&sf, &of, cordon.FrontEndCLI)
	if err != nil {
		return refuse(configError(os.Stderr, err), err)
	}
	if err := cordon.CheckBackend(); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		_ = rep.Write(cordon.Result{ExitCode: exitSetup, FailureType: cordon.FailureSetupError, FailureDetail: err.Error()})
		return exitSetup
	}
	dir, err := workDir(s, *cwd)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return refuse(exitConfig, err)
	}
	var extra []cordon.RunOption
	if *overlayName != "" {
		extra = append(extra, cordon.InOverlay(*overlayName))
	}
	res, err := runInTerminal(s, argv, dir, extra...)
	if err != nil && !errors.Is(err, cordon.ErrNotRecorded) {
		fmt.Fprintf(os.Stderr, "cordon: %s: %v\n", res.FailureType, err)
		_ = rep.Write(res)
		if *jsonOut {
			data, _ := json.MarshalIndent(res, "", "  ")
			os.Stderr.Write(append(data, '\n'))
		}
		if res.ExitCode != 0 {
			return res.ExitCode // overlay_in_use (125), config_error (2)
		}
		return exitSetup
	}
	switch res.FailureType {
	case cordon.FailureNone:
	case cordon.FailureProcessError:
		// A command not found inside may be on the host: the detail
		// says where and how to mount it.
		if res.ExitCode == 127 && strings.Contains(res.FailureDetail, " on the host") {
			fmt.Fprintf(os.Stderr, "cordon: %s\n", res.FailureDetail)
		}
	default:
		fmt.Fprintf(os.Stderr, "cordon: %s: %s\n", res.FailureType, res.FailureDetail)
	}
	if !*withSandbox {
		res.Sandbox = nil // cordon explain --json has it, once
	}
	if werr := rep.Write(res); werr != nil {
		fmt.Fprintf(os.Stderr, "cordon: write report: %v\n", werr)
	}
	if *jsonOut {
		data, _ := json.MarshalIndent(res, "", "  ")
		os.Stderr.Write(append(data, '\n'))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	return res.ExitCode
}

// runInTerminal runs argv in s with the caller's terminal and signals. The
// signals go back to their default once the run is over: nothing after it
// may leave cordon deaf to SIGTERM.
func runInTerminal(s *cordon.Sandbox, argv []string, dir string, extra ...cordon.RunOption) (cordon.Result, error) {
	sigs := make(chan os.Signal, 8)
	// SIGHUP too: a hung-up terminal is passed on to the command as a
	// terminal passes it to its foreground job, and the caller's
	// terminal is restored when the run ends, not left raw.
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	opts := []cordon.RunOption{cordon.Stdin(os.Stdin), cordon.Stdout(os.Stdout), cordon.Stderr(os.Stderr), cordon.Notify(sigs), cordon.Dir(dir)}
	opts = append(opts, extra...)
	if c, err := console.ConsoleFromFile(os.Stdin); err == nil {
		if _, err := console.ConsoleFromFile(os.Stdout); err == nil {
			opts = append(opts, cordon.Terminal(func() (uint16, uint16, bool) {
				ws, err := c.Size()
				return ws.Width, ws.Height, err == nil
			}))
			// Raw, output processing included (the command's terminal
			// does it), with what the terminal already held passed on.
			if restore, typeAhead, err := cordon.RawTerminal(os.Stdin); err == nil {
				defer func() { _ = restore() }()
				opts = append(opts, cordon.TypeAhead(typeAhead))
			}
		}
	}
	return s.Run(context.Background(), argv, opts...)
}

// openReport opens the file --report names, found in args before they are
// parsed (so a refusal of any other flag still writes it). A path cordon
// must not write (cordon.OpenReport) is itself a refusal, exit 2.
func openReport(args []string) (*cordon.Report, int) {
	path := ""
	for i := 0; i < len(args) && args[i] != "--"; i++ {
		a := args[i]
		switch {
		case a == "--report" || a == "-report":
			if i+1 < len(args) {
				path = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--report="):
			path = strings.TrimPrefix(a, "--report=")
		case strings.HasPrefix(a, "-report="):
			path = strings.TrimPrefix(a, "-report=")
		}
	}
	if path == "" {
		return nil, exitOK
	}
	rep, err := cordon.OpenReport(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: refused: --report: %v\n", err)
		return nil, exitConfig
	}
	return rep, exitOK
}

// workDir is the command's working directory: --cwd, checked, or the
// current directory when the sandbox shows it, else the workspace (with a
// note saying so).
func workDir(s *cordon.Sandbox, flag string) (string, error) {
	if flag != "" {
		dir, err := s.CheckDir(flag)
		if err != nil {
			return "", fmt.Errorf("cordon run: --cwd %s: %w; fix: give a directory inside the sandbox (cordon explain lists them)", flag, err)
		}
		return dir, nil
	}
	wd, _ := os.Getwd()
	dir, inside := s.WorkDir(wd)
	if !inside && wd != "" {
		fmt.Fprintf(os.Stderr, "cordon: note: the current directory %s is not in the sandbox; the command runs in %s (--cwd DIR to choose)\n", wd, dir)
	}
	return dir, nil
}
