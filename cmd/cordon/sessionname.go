package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// registerSessionStart registers the flags of `cordon session start` (and
// of the supervisor it starts, `cordon session serve`) on fs.
func registerSessionStart(fs *flag.FlagSet, sf *sandboxFlags, of *overrideFlags, ag *agentFlags) (name, overlayName *string, readyFD *int) {
	sf.register(fs)
	of.register(fs)
	ag.register(fs)
	name = fs.String("name", "", "the session's `NAME` (or give it first: cordon session start NAME)")
	overlayName = fs.String("overlay", "", "run the session's commands copy-on-write in the overlay `NAME` (cordon diff/apply/discard NAME)")
	readyFD = fs.Int("ready-fd", -1, "write the start's exit code to `FD`")
	return name, overlayName, readyFD
}

// errSessionArgs is a `cordon session start` given arguments besides one
// name and flags.
var errSessionArgs = errors.New("cordon session start takes one session name (NAME or --name NAME) and flags, no command; run a command with: cordon exec NAME -- CMD [ARG...]")

// sessionPositionalName turns `cordon session start NAME [flags]` (the name
// anywhere among the flags) into `--name NAME [flags]`, as stop, ps and
// exec take the name. Arguments the flags do not parse are returned as
// they are, for the supervisor to report. A second name, a name given both
// ways, or any other argument is errSessionArgs.
func sessionPositionalName(args []string) ([]string, error) {
	var names []string
	var flags []string
	rest := args
	for len(rest) > 0 {
		fs := flag.NewFlagSet("session start", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var sf sandboxFlags
		var of overrideFlags
		var ag agentFlags
		registerSessionStart(fs, &sf, &of, &ag)
		if fs.Parse(rest) != nil {
			// The supervisor's own parse says why.
			flags = append(flags, rest...)
			break
		}
		used := len(rest) - fs.NArg()
		if used > 0 && rest[used-1] == "--" {
			return nil, fmt.Errorf("%w (got %q after --)", errSessionArgs, fs.Args())
		}
		flags = append(flags, rest[:used]...)
		if fs.NArg() == 0 {
			break
		}
		names = append(names, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(names) == 0 {
		return args, nil
	}
	if len(names) > 1 || hasNameFlag(flags) {
		return nil, fmt.Errorf("%w (got %q besides the flags)", errSessionArgs, names)
	}
	return append([]string{"--name", names[0]}, flags...), nil
}

// hasNameFlag reports whether args (flags only) set --name.
func hasNameFlag(args []string) bool {
	fs := flag.NewFlagSet("session start", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var sf sandboxFlags
	var of overrideFlags
	var ag agentFlags
	name, _, _ := registerSessionStart(fs, &sf, &of, &ag)
	_ = fs.Parse(args)
	seen := *name != ""
	fs.Visit(func(f *flag.Flag) { seen = seen || f.Name == "name" })
	return seen
}

// refuseStart ends a `cordon session start` that fails before its
// supervisor is running: a supervisor forked by sessionstart_linux.c
// writes code on its ready pipe, so that the caller exits with it (and
// the message this process wrote on the caller's stderr) rather than
// "the supervisor exited before the sandbox was ready".
func refuseStart(code int) int {
	if fd := forkedReadyFD(); fd >= 0 {
		ready := os.NewFile(uintptr(fd), "ready")
		fmt.Fprintf(ready, "%d\n", code)
		ready.Close()
	}
	return code
}
