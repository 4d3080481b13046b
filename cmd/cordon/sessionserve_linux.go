package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/cmd/cordon/internal/sessiond"
)

// sessionServe is the session supervisor that `cordon session start`
// starts: it builds the sandbox, serves execs on the session's socket, and
// removes everything when the session ends (stop, idle timeout, maximum
// lifetime, SIGTERM, or the sandbox dying). Until the sandbox is ready its
// stderr is the starting command's; then it is /dev/null, so the caller's
// pipes are never held.
func sessionServe(args []string) int { return serveSession(args, false) }

// serveSession is sessionServe; printName prints the session's name on
// stdout once it is ready (a supervisor forked by `cordon session start`,
// whose stdout is the caller's).
func serveSession(args []string, printName bool) int {
	fs := newFlagSet("session serve", "--name N --ready-fd FD [sandbox flags]")
	if printName {
		// `cordon session start`, forked: its usage is the caller's.
		fs = newFlagSet("session start", "[--name N | NAME] [sandbox flags]")
	}
	var sf sandboxFlags
	var of overrideFlags
	var ag agentFlags
	name, overlayName, readyFD := registerSessionStart(fs, &sf, &of, &ag)
	if err := fs.Parse(args); err != nil {
		// A bad flag (or -h): the flag package said why on stderr. The
		// ready pipe comes first in the arguments, so it is known here:
		// `session start` exits 2 with that alone.
		if *readyFD >= 3 {
			ready := os.NewFile(uintptr(*readyFD), "ready")
			fmt.Fprintf(ready, "%d\n", exitConfig)
			ready.Close()
		}
		return exitConfig
	}
	if *readyFD < 3 {
		fmt.Fprintln(os.Stderr, "cordon session serve is started by cordon session start; run that instead")
		return exitConfig
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%v (got %q)\n", errSessionArgs, fs.Args())
		ready := os.NewFile(uintptr(*readyFD), "ready")
		fmt.Fprintf(ready, "%d\n", exitConfig)
		ready.Close()
		return exitConfig
	}
	ready := os.NewFile(uintptr(*readyFD), "ready")
	code, serve := startSupervisor(*name, *overlayName, &sf, &of, &ag)
	if code == exitOK && printName {
		fmt.Println(*name)
	}
	// The caller's pipes are let go before it hears back, so that a
	// caller reading them to EOF (`$(cordon session start)`) returns.
	if devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			_ = unix.Dup2(int(devNull.Fd()), fd)
		}
		devNull.Close()
	}
	fmt.Fprintf(ready, "%d\n", code)
	ready.Close()
	if serve == nil {
		return code
	}
	return serve()
}

// startSupervisor builds the session and returns the start's exit code
// and, when it succeeded, the function that serves it until it ends.
func startSupervisor(name, overlayName string, sf *sandboxFlags, of *overrideFlags, ag *agentFlags) (int, func() int) {
	p, s, err := open(sf, of, ag, cordon.FrontEndCLI)
	if err != nil {
		return configError(os.Stderr, err), nil
	}
	d, err := sessionDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup, nil
	}
	release, err := d.Claim(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon session start: %v\n", err)
		return exitConfig, nil
	}
	opts := []cordon.SessionOption{cordon.SessionStderr(os.Stderr), cordon.SessionLockedDir(d.SessionDir(name))}
	if overlayName != "" {
		opts = append(opts, cordon.SessionOverlay(overlayName))
	}
	sess, err := s.StartSession(context.Background(), opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		release()
		return exitSetup, nil
	}
	l, err := d.Listen(name)
	if err == nil {
		err = d.WriteInfo(sessiond.Info{Name: name, PID: os.Getpid(), ID: sess.ID(), Started: time.Now().UTC(),
			Root: s.Spec().Root, Config: p.Config().Source})
	}
	if err != nil {
		_ = sess.Close()
		fmt.Fprintf(os.Stderr, "cordon: session socket: %v\n", err)
		release()
		return exitSetup, nil
	}
	return exitOK, func() int {
		defer release()
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		go func() {
			<-sigs
			_ = sess.Close()
		}()
		srv := &sessiond.Server{Session: sess, LogDir: filepath.Join(d.SessionDir(name), "detached")}
		_ = srv.Serve(l)
		if err := sess.Close(); err != nil {
			return exitSetup
		}
		return exitOK
	}
}
