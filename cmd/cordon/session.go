package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/cmd/cordon/internal/sessiond"
)

func init() {
	register(command{name: "session", summary: "start, stop and list warm sessions (one sandbox, many `cordon exec`s)", run: sessionMain})
	register(command{name: "exec", summary: "run a command in a running session: cordon exec NAME [flags] -- CMD...", run: execMain})
}

const sessionUsage = `usage:
  cordon session start [--name N | NAME] [--config F] [--profile P] [--worker W]... [--mount SRC[:DST][:ro]]... [--network] [--allow HOST]... [-e NAME[=VALUE]]... [--readonly] [--timeout D] [--memory M] [--pids N] [--attach PATH]... [--audit FILE]
  cordon session stop NAME
  cordon session list
  cordon session ps NAME          (the execs started with --detach: id, state, log, command)
  cordon session kill NAME ID     (stop a detached exec and every process it started)
  cordon exec NAME [--timeout D] [--cwd DIR] [--memory SIZE] [--detach] [--report FILE] [--json] [--sandbox] -- CMD [ARG...]`

func sessionMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, sessionUsage)
		return exitConfig
	}
	if args[0] != "serve" && asksHelp(args) {
		fmt.Fprintln(os.Stdout, sessionUsage)
		return exitOK
	}
	switch args[0] {
	case "start":
		return sessionStart(args[1:])
	case "serve":
		return sessionServe(args[1:])
	case "stop":
		return sessionStop(args[1:])
	case "list", "ls":
		return sessionList(args[1:])
	case "ps":
		return sessionPs(args[1:])
	case "kill":
		return sessionKill(args[1:])
	case "-h", "--help", "help":
		fmt.Fprintln(os.Stdout, sessionUsage)
		return exitOK
	}
	fmt.Fprintf(os.Stderr, "cordon session: unknown subcommand %q\n%s\n", args[0], sessionUsage)
	return exitConfig
}

func sessionDir() (*sessiond.Dir, error) {
	if err := cordon.CheckBackend(); err != nil {
		return nil, err
	}
	return sessiond.OpenDir(cordon.StateDir())
}

// sessionStart starts the session's supervisor detached from this process
// (its own session, stdio on /dev/null once the sandbox is ready, so it
// holds none of the caller's pipes) and waits until it reports the sandbox
// ready or failed. With cgo on Linux the supervisor was forked before the
// Go runtime started (sessionstart_linux.c) and this is it; otherwise it
// is a `cordon session serve` process started here.
func sessionStart(args []string) int {
	args, err := sessionPositionalName(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return refuseStart(exitConfig)
	}
	name := ""
	rest := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--name" || a == "-name":
			if i+1 >= len(args) {
				fmt.Fprintln(os.Stderr, "cordon session start: --name needs a value")
				return refuseStart(exitConfig)
			}
			name = args[i+1]
			i++
		case strings.HasPrefix(a, "--name="), strings.HasPrefix(a, "-name="):
			name = a[strings.Index(a, "=")+1:]
		default:
			rest = append(rest, a)
		}
	}
	if name == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		name = "s-" + hex.EncodeToString(b[:])
	}
	if err := sessiond.CheckName(name); err != nil {
		fmt.Fprintf(os.Stderr, "cordon session start: %v\n", err)
		return refuseStart(exitConfig)
	}
	if fd := forkedReadyFD(); fd >= 0 {
		// This is the supervisor, forked before the Go runtime started;
		// the parent waits on the pipe (sessionstart_linux.c).
		return serveSession(append([]string{"--name", name, "--ready-fd", strconv.Itoa(fd)}, rest...), true)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	cmd := exec.Command(self, append([]string{"session", "serve", "--name", name, "--ready-fd", "3"}, rest...)...)
	cmd.ExtraFiles = []*os.File{pw}
	// The supervisor reports set-up problems on this stderr, and lets go
	// of it (for /dev/null) once it reported the start's outcome.
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: start the session supervisor: %v\n", err)
		return exitSetup
	}
	pw.Close()
	go func() { _ = cmd.Wait() }() // reaps it only if it dies during start
	code, text := readReady(pr)
	fmt.Fprint(os.Stderr, text)
	if code == exitOK {
		fmt.Println(name)
	}
	return code
}

// readReady reads the supervisor's report: "CODE\n" then text for stderr.
func readReady(r io.Reader) (int, string) {
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	if err != nil {
		return exitSetup, "cordon: the session supervisor exited before the sandbox was ready\n"
	}
	code, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return exitSetup, "cordon: the session supervisor sent a malformed report\n"
	}
	rest, _ := io.ReadAll(br)
	return code, string(rest)
}

func sessionStop(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: cordon session stop NAME")
		return exitConfig
	}
	d, err := sessionDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	if err := d.Stop(args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "cordon session stop: %v\n", err)
		return 1
	}
	return exitOK
}

func sessionList(args []string) int {
	if len(args) != 0 {
		fmt.Fprintln(os.Stderr, "usage: cordon session list")
		return exitConfig
	}
	d, err := sessionDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	infos, err := d.List()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	// What supervisors that were killed left: container state, cgroups.
	if err := cordon.Reap(); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: warning: %v\n", err)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPID\tSTARTED\tWORKSPACE\tCONFIG")
	for _, i := range infos {
		started := "-"
		if !i.Started.IsZero() {
			started = i.Started.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", i.Name, i.PID, started, i.Root, i.Config)
	}
	_ = tw.Flush()
	return exitOK
}

func sessionPs(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: cordon session ps NAME")
		return exitConfig
	}
	d, err := sessionDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	text, err := d.Ps(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon session ps: %v\n", err)
		return 1
	}
	fmt.Print(text)
	return exitOK
}

func sessionKill(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cordon session kill NAME ID (cordon session ps NAME lists the ids)")
		return exitConfig
	}
	d, err := sessionDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	if err := d.Kill(args[0], args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "cordon session kill: %v\n", err)
		return 1
	}
	return exitOK
}
