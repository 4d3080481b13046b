package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/cmd/cordon/internal/sessiond"
)

// The Go client of `cordon exec`. On amd64 the common exec never reaches
// it: the C client at the binary's entry point (execclient_linux.c) serves
// it before the C library starts, and leaves the rest here: -h, every
// refusal, a terminal (raw mode, its size, what it held), a session it
// cannot reach, and every exec on other architectures or without cgo. It
// says what the C client says, to the byte: cmd/cordon's tests run both.

const execUsage = "usage: cordon exec NAME [--timeout D] [--cwd DIR] [--memory SIZE] [--detach] [--report FILE] [--json] [--sandbox] -- CMD [ARG...]\n"

// execFlags is `cordon exec`'s command line.
type execFlags struct {
	name, timeout, cwd, memory, report string
	json, detach, sandbox              bool
	argv                               []string
}

// execClient is one `cordon exec`: its report and its terminal.
type execClient struct {
	json    bool
	report  *execReport
	restore func() error
}

func execMain(args []string) int {
	c := &execClient{}
	if rp := execReportArg(args); rp != "" {
		r, err := openExecReport(rp)
		if err != nil {
			why := strerror(err)
			switch {
			case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
				why = "a symbolic link is on the way"
			case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENXIO):
				why = "not a regular file with one link"
			}
			fmt.Fprintf(os.Stderr, "cordon: refused: --report %s: %s; cordon writes a report only to a regular file reached without symbolic links (remove it or give another path)\n", rp, why)
			return exitConfig
		}
		c.report = r
	}
	f, code, msg := parseExecFlags(args)
	if msg != "" {
		return c.refuse(msg, code)
	}
	if f == nil {
		fmt.Fprint(os.Stdout, execUsage) // -h
		return exitOK
	}
	c.json = f.json
	return c.exec(f)
}

// execReportArg finds --report's value before the flags are parsed, so
// that a refused flag still writes the report. It stops where the parser
// stops: at "--" or at the command (the second word that is not a flag or
// a flag's value), so a command's own "--report X" is never cordon's.
func execReportArg(args []string) string {
	r, words := "", 0
	for i := 0; i < len(args) && args[i] != "--"; i++ {
		f, ok := strings.CutPrefix(args[i], "-")
		if !ok {
			if words++; words > 1 {
				break // the command, without "--"
			}
			continue
		}
		f = strings.TrimPrefix(f, "-")
		if v, ok := strings.CutPrefix(f, "report="); ok {
			r = v
		} else if (f == "report" || f == "timeout" || f == "cwd" || f == "memory") && i+1 < len(args) {
			if f == "report" {
				r = args[i+1]
			}
			i++
		}
	}
	return r
}

// parseExecFlags parses args; for -h it returns no flags and no message,
// for a refusal the exit code and the message (ending in the usage when
// the line's shape is wrong).
func parseExecFlags(args []string) (*execFlags, int, string) {
	f := &execFlags{}
	vals := map[string]*string{"timeout": &f.timeout, "cwd": &f.cwd, "report": &f.report, "memory": &f.memory}
	bools := map[string]*bool{"json": &f.json, "detach": &f.detach, "sandbox": &f.sandbox}
	first := -1
	for i := 0; i < len(args) && first < 0; i++ {
		a := args[i]
		switch {
		case a == "--":
			first = i + 1
			continue
		case a == "-h" || a == "--help":
			return nil, exitOK, ""
		case !strings.HasPrefix(a, "-"):
			if f.name == "" {
				f.name = a
			} else {
				first = i // the command, without "--"
			}
			continue
		}
		fl := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if b, ok := bools[fl]; ok {
			*b = true
			continue
		}
		k, v, hasValue := strings.Cut(fl, "=")
		dst, ok := vals[k]
		if !ok {
			return nil, exitConfig, fmt.Sprintf("cordon exec: unknown flag %.400s\n", a) + execUsage
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, exitConfig, fmt.Sprintf("cordon exec: --%s needs a value\n", k) + execUsage
			}
			i++
			v = args[i]
		}
		*dst = v
	}
	switch {
	case f.name == "":
		return nil, exitConfig, "cordon exec: no session name given\n" + execUsage
	case first < 0 || first >= len(args):
		return nil, exitConfig, "cordon exec: no command given; fix: cordon exec NAME [flags] -- CMD [ARG...]\n"
	case sessiond.CheckName(f.name) != nil:
		return nil, exitConfig, fmt.Sprintf("cordon exec: invalid session name \"%s\": use 1-64 of A-Z a-z 0-9 . _ - starting with a letter or digit\n", truncate(f.name, 200))
	case len(f.cwd) > 4096:
		return nil, exitConfig, "cordon exec: --cwd is longer than 4096 bytes\n"
	}
	f.argv = args[first:]
	return f, exitOK, ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// refuse prints msg and writes the config_error report: every invocation
// that names a report writes one.
func (c *execClient) refuse(msg string, code int) int {
	fmt.Fprint(os.Stderr, msg)
	detail := strings.TrimSuffix(strings.TrimSuffix(msg, execUsage), "\n")
	_ = c.report.write([]byte(fmt.Sprintf("{\n  \"exit_code\": %d,\n  \"failure_type\": \"config_error\",\n  \"failure_detail\": %s,\n  \"duration_ms\": 0\n}\n",
		code, jsonString(detail))))
	return code
}

// jsonString quotes s as the C client did: \" and \\, and \u00XX for the
// control characters.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '"' || ch == '\\':
			b.WriteByte('\\')
			b.WriteByte(ch)
		case ch < 0x20:
			fmt.Fprintf(&b, "\\u%04x", ch)
		default:
			b.WriteByte(ch)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// gone reports that session name cannot be used, as the C client does: the
// message, the report on stderr for --json and at --report's path; 125.
func (c *execClient) gone(err error) int {
	c.restoreTTY()
	msg := err.Error()
	rep := fmt.Sprintf("{\n  \"exit_code\": %d,\n  \"failure_type\": \"session_gone\",\n  \"failure_detail\": \"%s\",\n  \"duration_ms\": 0\n}\n", exitSetup, msg)
	fmt.Fprintf(os.Stderr, "cordon: %s\n", msg)
	if c.json {
		fmt.Fprint(os.Stderr, rep)
	}
	_ = c.report.write([]byte(rep))
	return exitSetup
}

func (c *execClient) restoreTTY() {
	if c.restore != nil {
		_ = c.restore()
		c.restore = nil
	}
}

// exec sends the request and relays the exchange: the signals while the
// command runs, then the reply's message, report and exit code.
func (c *execClient) exec(f *execFlags) int {
	conn, err := sessiond.DialExec(cordon.StateDir(), f.name)
	if err != nil {
		return c.gone(err)
	}
	defer conn.Close()
	// Every fd of 0-2 must be open to be sent; a closed one becomes /dev/null.
	for fd := 0; fd < 3; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			if n, err := unix.Open("/dev/null", unix.O_RDWR, 0); err == nil && n != fd {
				_ = unix.Dup2(n, fd)
				unix.Close(n)
			}
		}
	}
	opts := map[string]string{}
	for k, v := range map[string]string{"timeout": f.timeout, "memory": f.memory, "cwd": f.cwd} {
		if v != "" {
			opts[k] = v
		}
	}
	if f.cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			opts["wd"] = wd // the command runs here when the sandbox shows it
		}
	}
	for k, on := range map[string]bool{"detach": f.detach, "report": f.report != "" || f.json, "sandbox": f.sandbox} {
		if on {
			opts[k] = "1"
		}
	}
	// A terminal on both stdin and stdout gets the command a fresh terminal
	// of the sandbox's own, as with cordon run; this one is made raw before
	// the request leaves, and what it held goes along.
	tty := isTerminal(0) && isTerminal(1)
	if tty {
		cols, rows := termSize()
		opts["tty"], opts["cols"], opts["rows"] = "1", strconv.Itoa(int(cols)), strconv.Itoa(int(rows))
		restore, ahead, err := cordon.RawTerminal(os.Stdin)
		if err == nil {
			c.restore = restore
		}
		if len(ahead) > 0 {
			opts["input"] = hex.EncodeToString(ahead)
		}
	}
	req, err := sessiond.EncodeExec(opts, f.argv, os.Environ())
	if err != nil {
		c.restoreTTY()
		fmt.Fprintf(os.Stderr, "cordon exec: %v\n", err)
		return exitSetup
	}
	// The forwarders are in place before the request leaves: a signal that
	// arrives once the command may run is never the default action here.
	sigs := make(chan os.Signal, 8)
	fwd := []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}
	if tty {
		fwd = append(fwd, syscall.SIGWINCH)
	}
	signal.Notify(sigs, fwd...)
	defer signal.Stop(sigs)
	if err := sendExec(conn, req); err != nil {
		return c.gone(&sessiond.GoneError{Name: f.name, Why: sessiond.WhyHungUp})
	}
	go forwardSignals(conn, sigs)
	code, msg, report, err := sessiond.ReadResponse(conn)
	if err != nil {
		why := sessiond.WhyEnded
		if errors.Is(err, sessiond.ErrProtocol) {
			why = sessiond.WhyMalformed
		}
		return c.gone(&sessiond.GoneError{Name: f.name, Why: why})
	}
	c.restoreTTY()
	fmt.Fprint(os.Stderr, msg)
	if len(report) > 0 {
		if c.json {
			_, _ = os.Stderr.Write(report)
		}
		if err := c.report.write(report); err != nil {
			fmt.Fprintf(os.Stderr, "cordon: the report %s was replaced or moved while the command ran and cannot be written again (%s); "+
				"give --report a path outside the folders the session can write\n", c.report.path, strerror(err))
			return exitSetup
		}
	}
	return code
}

// sendExec sends the request with fds 0, 1 and 2 on its first bytes.
func sendExec(conn *net.UnixConn, req []byte) error {
	n, _, err := conn.WriteMsgUnix(req, unix.UnixRights(0, 1, 2), nil)
	if err == nil && n < len(req) {
		_, err = conn.Write(req[n:])
	}
	return err
}

// forwardSignals sends each signal as a frame, and a terminal's new size.
func forwardSignals(conn *net.UnixConn, sigs <-chan os.Signal) {
	for s := range sigs {
		sig := s.(syscall.Signal)
		b := sessiond.SignalFrame(int(sig))
		if sig == syscall.SIGWINCH {
			b = sessiond.WinchFrame(termSize())
		}
		if _, err := conn.Write(b); err != nil {
			return
		}
	}
}

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// termSize is the size of the terminal on fd 1, or 0x0.
func termSize() (cols, rows uint16) {
	ws, err := unix.IoctlGetWinsize(1, unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return ws.Col, ws.Row
}
