package main

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/console"
)

// onTerminal runs cmd with a fresh pty as its controlling terminal and
// stdio, after writing pending to the pty (input the terminal holds, in
// canonical mode, before cordon starts: a harness's type-ahead, or the ^D
// `script` sends when its own input ends), and returns every byte the
// caller's terminal showed, until the last holder of the terminal closed
// it.
func onTerminal(t *testing.T, u sessionUser, pending string, args ...string) string {
	t.Helper()
	master, slave, err := console.NewPty()
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	defer master.Close()
	tty, err := os.OpenFile(slave, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if pending != "" {
		if _, err := master.Write([]byte(pending)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := u.cmd("", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	done := make(chan []byte)
	go func() {
		var out bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				done <- out.Bytes()
				return
			}
		}
	}()
	werr := cmd.Wait()
	out := string(<-done)
	if werr != nil {
		t.Fatalf("cordon %v: %v; terminal: %q", args, werr, out)
	}
	return out
}

// TestTTYExactBytes is finding 9 of issue 21: a TTY `cordon run` and a
// TTY `cordon exec` put exactly the command's output on the caller's
// terminal, "hi\r\n" with nothing before it (no "^@" from an end-of-file
// the terminal held when cordon made it raw, no "\r\r\n" from output
// processed twice), root and rootless. What the terminal held reaches the
// command: a pending ^D is an end-of-file there (cat ends), a pending
// line is read (and echoed once by each terminal, as typed). The sandbox's
// --timeout ends a cat that never sees the end-of-file, so that a
// regression fails instead of hanging.
func TestTTYExactBytes(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("ttyb")
			startNamed(t, u, name)
			for _, c := range []struct {
				name, pending string
				args          []string
				want          string
			}{
				{"run", "", []string{"run", "--profile", "workspace", "--", "echo", "hi"}, "hi\r\n"},
				{"run after ^D", "\x04", []string{"run", "--profile", "workspace", "--", "echo", "hi"}, "hi\r\n"},
				{"run cat after ^D", "\x04", []string{"run", "--profile", "workspace", "--timeout", "30s", "--", "cat"}, ""},
				{"run reads a pending line", "abc\n", []string{"run", "--profile", "workspace", "--", "sh", "-c", "read x; echo got=$x"},
					"abc\r\nabc\r\ngot=abc\r\n"},
				{"exec", "", []string{"exec", name, "--", "echo", "hi"}, "hi\r\n"},
				{"exec after ^D", "\x04", []string{"exec", name, "--", "echo", "hi"}, "hi\r\n"},
				{"exec cat after ^D", "\x04", []string{"exec", name, "--timeout", "30s", "--", "cat"}, ""},
				{"exec reads a pending line", "abc\n", []string{"exec", name, "--", "sh", "-c", "read x; echo got=$x"},
					"abc\r\nabc\r\ngot=abc\r\n"},
			} {
				t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
					if got := onTerminal(t, u, c.pending, c.args...); got != c.want {
						t.Fatalf("the caller's terminal showed %q; want exactly %q", got, c.want)
					}
				})
			}
		})
	}
}
