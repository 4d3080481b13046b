// Command cordon runs commands inside a declared sandbox boundary.
//
// main is thin: it configures logging, picks the subcommand and hands over.
// Each subcommand lives in its own file and registers itself in init.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/cordon-run/cordon"
)

// command is one subcommand. run returns the process exit code.
type command struct {
	name    string
	summary string
	run     func(args []string) int
	// hidden: left out of the usage and the completions (a helper that
	// cordon itself names, such as proxy-connect).
	hidden bool
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// Exit codes shared by the subcommands.
const (
	exitOK     = 0
	exitDenied = 1 // `check`: the access is not allowed
	// exitCommandsOnly: `check`: a command may, the file tools may not (a
	// suffix or size rule, or the sandbox's own /tmp, /proc, /dev).
	exitCommandsOnly = 3
	exitConfig       = 2 // the config, a worker file or a flag is invalid
	exitSetup        = cordon.ExitSetupError
	exitNotRunnbl    = 126
)

func usage(w io.Writer) {
	names := visibleCommands()
	fmt.Fprintf(w, "usage: cordon COMMAND [FLAGS] [-- CMD ARGS...]\n\ncommands:\n")
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nenvironment: CORDON_LOG=debug|info|warn|error, CORDON_LOG_FORMAT=text|json\n")
}

// visibleCommands are the names of the commands that are not hidden,
// sorted.
func visibleCommands() []string {
	var names []string
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// helpFor prints c's help to stdout, as `cordon COMMAND -h` does.
func helpFor(c command) int {
	helpWanted = true
	c.run([]string{"-h"})
	return exitOK
}

func setupLogging() {
	logrus.SetOutput(os.Stderr)
	logrus.SetLevel(logrus.WarnLevel)
	if lvl, err := logrus.ParseLevel(os.Getenv("CORDON_LOG")); err == nil {
		logrus.SetLevel(lvl)
	}
	if strings.EqualFold(os.Getenv("CORDON_LOG_FORMAT"), "json") {
		logrus.SetFormatter(&logrus.JSONFormatter{})
	}
}

func main() {
	maybeInit() // libcontainer's re-exec'd init never returns from here
	maybeOCI()  // invoked as cordon-oci: runc's command line
	setupLogging()
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || (os.Args[1] == "help" && len(os.Args) == 2) {
		if len(os.Args) < 2 {
			usage(os.Stderr)
			os.Exit(exitConfig)
		}
		usage(os.Stdout)
		os.Exit(exitOK)
	}
	switch os.Args[1] {
	case "--version", "-version", "-v":
		os.Exit(versionMain(nil))
	}
	if os.Args[1] == "help" && len(os.Args) == 3 {
		// `cordon help run` is `cordon run -h`.
		c, ok := commands[os.Args[2]]
		if !ok {
			fmt.Fprintf(os.Stderr, "cordon help: unknown command %q\n\n", os.Args[2])
			usage(os.Stderr)
			os.Exit(exitConfig)
		}
		os.Exit(helpFor(c))
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "cordon: unknown command %q\n\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(exitConfig)
	}
	if runtime.GOOS == "darwin" && c.name != "proxy-connect" {
		useAsSSHProxy()
	}
	if c.name != "exec" && asksHelp(os.Args[2:]) {
		// The usage on stdout, exit 0, whatever else the line holds.
		helpWanted = true
		c.run(os.Args[2:])
		os.Exit(exitOK)
	}
	os.Exit(c.run(os.Args[2:]))
}

// useAsSSHProxy names this executable as ssh's ProxyCommand for macOS
// runs with an allow list (its proxy-connect subcommand). Without it (a
// path ssh's shell cannot take), ssh in such runs fails closed as before.
func useAsSSHProxy() {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err == nil {
		err = cordon.SetSSHProxyCommand(exe)
	}
	if err != nil {
		logrus.Debugf("no ssh ProxyCommand in runs with an allow list: %v", err)
	}
}
