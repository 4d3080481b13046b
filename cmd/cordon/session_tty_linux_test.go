package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/console"
)

// TestSessionExecInteractiveTTY drives `cordon exec N -- bash -i` through
// a real pty, as `cordon run` is driven in TestRunInteractiveTTY: the
// command gets a terminal of the sandbox's own, ^C reaches its foreground
// job, and the exit status is bash's.
func TestSessionExecInteractiveTTY(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("tty")
			startNamed(t, u, name)
			master, slave, err := console.NewPty()
			if err != nil {
				t.Fatalf("pty: %v", err)
			}
			defer master.Close()
			tty, err := os.OpenFile(slave, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			_ = master.Resize(console.WinSize{Width: 100, Height: 30})
			cmd := u.cmd("", "exec", name, "--", "bash", "--norc", "--noprofile", "-i")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			tty.Close()
			var mu sync.Mutex
			var out bytes.Buffer
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := master.Read(buf)
					mu.Lock()
					out.Write(buf[:n])
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
			waitOut := func(want string) {
				t.Helper()
				for i := 0; i < 400; i++ {
					mu.Lock()
					got := out.String()
					mu.Unlock()
					if strings.Contains(got, want) {
						return
					}
					time.Sleep(25 * time.Millisecond)
				}
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("never saw %q in the terminal: %q", want, out.String())
			}
			send := func(s string) {
				t.Helper()
				if _, err := master.Write([]byte(s)); err != nil {
					t.Fatal(err)
				}
			}
			send("tty; stty size; echo PTY-$((6*7))\n")
			waitOut("PTY-42")
			waitOut("/dev/pts/")
			waitOut("30 100")
			send("sleep 60\n")
			time.Sleep(300 * time.Millisecond)
			send("\x03") // ^C: interrupts sleep, not the exec
			send("echo AFTER-$((2+3))\n")
			waitOut("AFTER-5")
			send("exit 7\n")
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 7 {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("exit: %v (want status 7); terminal: %q", err, out.String())
			}
		})
	}
}
