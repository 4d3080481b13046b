package runner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/opencontainers/runc/libcontainer"
	// nsenter joins and creates namespaces in C before the Go runtime
	// starts in the re-executed init; it does nothing in other processes.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
	"golang.org/x/sys/unix"
)

// sandboxInitArg makes the re-executed binary act as the sandbox's PID 1.
const sandboxInitArg = "cordon-sandbox-init"

// livenessFD is the descriptor of the liveness pipe in the sandbox's init:
// libcontainer passes Process.ExtraFiles from fd 3 on.
const livenessFD = 3

// Init must be called first thing in main (and in TestMain) of every binary
// that starts containers. When the binary was re-executed by libcontainer as
// a container's init ("init"), or by cordon as the sandbox's PID 1, Init runs
// that role and never returns.
func Init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case "init":
		libcontainer.Init()
	case sandboxInitArg:
		os.Exit(sandboxInit(os.Args[2:]))
	}
}

// initArgs wraps a command so that it runs under cordon's own PID 1. Inside
// the container /proc/self/exe is libcontainer's sealed copy of this binary,
// so nothing has to be mounted for it.
func initArgs(args []string) []string {
	return append([]string{"/proc/self/exe", sandboxInitArg, "--"}, args...)
}

// sandboxInit is PID 1 of the sandbox's PID namespace. It exists because a
// command that runs as PID 1 itself ignores every signal it has no handler
// for, never reaps re-parented orphans, and cannot learn that cordon died.
// It:
//   - exits as soon as cordon is gone: it holds the read end of a pipe whose
//     write end only cordon has (fd 3), and EOF on it means cordon died;
//     when PID 1 exits, the kernel kills the whole namespace, so a SIGKILLed
//     cordon leaves no sandboxed process behind. (A parent-death signal is
//     not used: the kernel sends it when the parent *thread* exits, and Go
//     threads do exit.)
//   - runs the command in its own process group (the terminal's foreground
//     group when there is a terminal) and forwards signals to that group;
//   - reaps every orphan, and exits with the command's status.
func sandboxInit(args []string) int {
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "cordon: "+sandboxInitArg+" runs only as PID 1 inside a sandbox")
		return ExitSetupError
	}
	// The liveness pipe must not reach the command.
	if _, err := unix.FcntlInt(livenessFD, unix.F_GETFD, 0); err != nil {
		fmt.Fprintln(os.Stderr, "cordon: no liveness pipe from cordon")
		return ExitSetupError
	}
	unix.CloseOnExec(livenessFD)
	go func() {
		var b [1]byte
		for {
			n, err := unix.Read(livenessFD, b[:])
			if err == unix.EINTR {
				continue
			}
			if n == 0 || err != nil {
				os.Exit(128 + int(unix.SIGKILL)) // cordon died: end the sandbox
			}
		}
	}()
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "cordon: no command")
		return ExitSetupError
	}
	if err := loadSeccompFromEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return ExitSetupError
	}
	sigs := make(chan os.Signal, 16)
	forwarded := []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGCONT}
	signal.Notify(sigs, forwarded...)

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := unix.IoctlGetTermios(0, unix.TCGETS); err == nil {
		// The command owns the terminal: keystrokes like ^C reach it (and
		// not this init) directly.
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = 0
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return ExitNotFound
		}
		return ExitNotRunnable
	}
	child := cmd.Process.Pid
	go func() {
		for s := range sigs {
			_ = unix.Kill(-child, s.(unix.Signal))
		}
	}()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return ExitSetupError
		}
		if pid != child {
			continue // an orphan: reaped
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}
