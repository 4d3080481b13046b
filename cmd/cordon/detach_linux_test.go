package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/console"
)

// runUntil is u.run that kills cordon if it has not returned after a
// generous guard: a hang (the bug under test) then fails the test instead
// of stalling the suite. It asserts no duration.
func runUntil(t *testing.T, u sessionUser, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := u.cmd("", args...)
	c2 := exec.CommandContext(ctx, c.Path, c.Args[1:]...)
	c2.Dir, c2.Env = c.Dir, c.Env
	var so, se bytes.Buffer
	c2.Stdout, c2.Stderr = &so, &se
	err := c2.Run()
	if ctx.Err() != nil {
		t.Fatalf("cordon %v never returned (killed); stderr: %s", args, se.String())
	}
	r := cliResult{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// eventually polls cond (a fact of the command's, never a duration) for a
// while, and fails with what it saw.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for i := 0; i < 1200; i++ {
		ok, s := cond()
		if ok {
			return
		}
		last = s
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never happened; last: %s", what, last)
}

// TestSessionExecDetach: `cordon exec --detach` returns while the command
// still runs (it waits for a file the test makes only afterwards, so an
// exec that blocked would never return), with the exec's id on stdout and
// the caller's pipes let go; `cordon session ps` lists it running, then
// exited with its output in its log; `cordon session kill` stops another
// with what it started, and refuses an unknown id. Root and rootless.
func TestSessionExecDetach(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("detach")
			startNamed(t, u, name)
			release, finished := filepath.Join(u.ws, "release"), filepath.Join(u.ws, "finished")
			r := runUntil(t, u, "exec", name, "--detach", "--", "sh", "-c",
				"echo started; while [ ! -e release ]; do sleep 0.05; done; echo done > finished; echo finished")
			if r.code != 0 || strings.TrimSpace(r.stdout) != "1" {
				t.Fatalf("exec --detach: exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
			}
			if _, err := os.Lstat(finished); err == nil {
				t.Fatal("the detached command finished before the test released it: exec --detach did not return at once")
			}
			ps := runUntil(t, u, "session", "ps", name)
			if ps.code != 0 || !strings.Contains(ps.stdout, "1   running") || !strings.Contains(ps.stdout, "sh -c echo started") {
				t.Fatalf("session ps: exit %d\n%s%s", ps.code, ps.stdout, ps.stderr)
			}
			writeFile(t, release, "")
			eventually(t, "the detached command's end", func() (bool, string) {
				ps := runUntil(t, u, "session", "ps", name)
				return strings.Contains(ps.stdout, "1   exited 0"), ps.stdout
			})
			if _, err := os.Lstat(finished); err != nil {
				t.Fatalf("the released command left no marker: %v", err)
			}
			log := filepath.Join(u.state, "sessions", name, "detached", "1.log")
			if b, err := os.ReadFile(log); err != nil || string(b) != "started\nfinished\n" {
				t.Errorf("log %s: %q %v", log, b, err)
			}

			pidFile := filepath.Join(u.ws, "bg.pid")
			r = runUntil(t, u, "exec", name, "--detach", "--", "sh", "-c", "sleep 300 & echo $! > bg.pid; wait")
			if r.code != 0 || strings.TrimSpace(r.stdout) != "2" {
				t.Fatalf("second exec --detach: exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
			}
			eventually(t, "the background pid", func() (bool, string) {
				b, _ := os.ReadFile(pidFile)
				return strings.HasSuffix(string(b), "\n"), string(b)
			})
			if k := runUntil(t, u, "session", "kill", name, "2"); k.code != 0 {
				t.Fatalf("session kill: exit %d %s", k.code, k.stderr)
			}
			ps = runUntil(t, u, "session", "ps", name)
			if !strings.Contains(ps.stdout, "2   exited 137") {
				t.Errorf("after kill, ps:\n%s", ps.stdout)
			}
			// The sleep it started is gone too: nothing in the sandbox
			// still runs sleep.
			if r := runUntil(t, u, "exec", name, "--", "sh", "-c", "cat /proc/[0-9]*/comm | grep -c '^sleep$' || true"); strings.TrimSpace(r.stdout) != "0" {
				t.Errorf("processes named sleep after kill: %q", r.stdout)
			}
			if k := runUntil(t, u, "session", "kill", name, "99"); k.code != 1 || !strings.Contains(k.stderr, "no detached exec \"99\"") {
				t.Errorf("kill of an unknown id: exit %d %s", k.code, k.stderr)
			}
		})
	}
}

// TestSessionExecSecondCtrlC types ^C at a real terminal against a terminal
// exec whose command ignores SIGINT: the first reaches the command (it
// traps it), a second within runner.KeyInterruptWindow kills the exec's
// tree, and the session goes on. Root and rootless.
func TestSessionExecSecondCtrlC(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("ctrlc")
			startNamed(t, u, name)
			report := filepath.Join(u.ws, "r.json")
			master, slave, err := console.NewPty()
			if err != nil {
				t.Fatalf("pty: %v", err)
			}
			defer master.Close()
			tty, err := os.OpenFile(slave, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			cmd := u.cmd("", "exec", name, "--report", report, "--", "sh", "-c", `trap 'echo GOT-INT' INT; echo READY; while :; do sleep 1; done`)
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
			seen := func(want string) func() (bool, string) {
				return func() (bool, string) {
					mu.Lock()
					defer mu.Unlock()
					return strings.Contains(out.String(), want), out.String()
				}
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			eventually(t, "READY", seen("READY"))
			_, _ = master.Write([]byte{3})
			eventually(t, "the first ^C reaching the command", seen("GOT-INT"))
			// A second ^C within the window kills; on a loaded machine a
			// press may come late, so press until the exec ends.
			var werr error
		press:
			for i := 0; ; i++ {
				_, _ = master.Write([]byte{3})
				select {
				case werr = <-done:
					break press
				case <-time.After(300 * time.Millisecond):
				}
				if i == 400 {
					_ = cmd.Process.Kill()
					t.Fatalf("the exec outlived 400 presses of ^C; terminal: %q", out.String())
				}
			}
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.ExitCode() != 137 {
				t.Fatalf("exit %v, want 137", werr)
			}
			var res struct {
				FailureType   string `json:"failure_type"`
				FailureDetail string `json:"failure_detail"`
			}
			if b, err := os.ReadFile(report); err != nil || json.Unmarshal(b, &res) != nil || !strings.Contains(res.FailureDetail, "^C was typed twice") {
				t.Fatalf("report %+v (%v)", res, err)
			}
			if r := runUntil(t, u, "exec", name, "--", "echo", "alive"); r.code != 0 || r.stdout != "alive\n" {
				t.Errorf("the session did not go on: %d %q %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}
