package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/console"

	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/runner"
)

// ptyRun is cordon running with a real pty as its controlling terminal, as
// a person at a terminal runs it; the test types on the master.
type ptyRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	master console.Console
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan error
}

// startPTY starts cordon with args in dir, its stdout and stderr on a new
// pty; stdin is the pty too when tty is true, /dev/null otherwise (cordon
// then runs without a terminal, and ^C reaches it as SIGINT).
func startPTY(t *testing.T, dir string, tty bool, args ...string) *ptyRun {
	t.Helper()
	master, slave, err := console.NewPty()
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	term, err := os.OpenFile(slave, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	cmd := exec.Command(cordonBin(t), args...)
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, term
	if !tty {
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		cmd.Stdin = null
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &ptyRun{t: t, cmd: cmd, master: master, done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	return p
}

func (p *ptyRun) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *ptyRun) waitOut(want string) {
	p.t.Helper()
	for i := 0; i < 1200; i++ {
		if strings.Contains(p.output(), want) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	p.t.Fatalf("never saw %q in the terminal: %q", want, p.output())
}

func (p *ptyRun) send(s string) {
	p.t.Helper()
	if _, err := p.master.Write([]byte(s)); err != nil {
		p.t.Fatal(err)
	}
}

// wait returns cordon's exit code; a cordon that never exits fails the
// test instead of hanging it.
func (p *ptyRun) wait() int {
	p.t.Helper()
	select {
	case err := <-p.done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			p.t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		p.t.Fatalf("cordon did not exit; terminal: %q", p.output())
		return -1
	}
}

func readReport(t *testing.T, path string) runner.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	var res runner.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("report: %v", err)
	}
	return res
}

// TestRunSecondCtrlCKillsSandbox types ^C twice at a real terminal against
// a command that ignores SIGINT: the first reaches the command and is
// ignored, the second kills the whole sandbox, with and without a tty.
func TestRunSecondCtrlCKillsSandbox(t *testing.T) {
	testenv.RequireSandbox(t)
	for _, tty := range []bool{true, false} {
		name := "without a tty"
		if tty {
			name = "with a tty"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			report := filepath.Join(t.TempDir(), "r.json")
			p := startPTY(t, dir, tty, "run", "--report", report, "--", "sh", "-c",
				`trap 'echo GOT-INT' INT; echo READY; while :; do sleep 1; done`)
			p.waitOut("READY")
			p.send("\x03")
			p.waitOut("GOT-INT")
			// The second ^C kills. A terminal counts presses within
			// KeyInterruptWindow of each other, so press again until
			// cordon exits: on a loaded machine a press may come late.
			code := -1
			for i := 0; i < 20 && code < 0; i++ {
				p.send("\x03")
				select {
				case err := <-p.done:
					p.done <- err
					code = p.wait()
				case <-time.After(300 * time.Millisecond):
				}
			}
			if code < 0 {
				code = p.wait()
			}
			res := readReport(t, report)
			if code != 137 || res.FailureType != runner.FailureProcessError || !strings.Contains(res.FailureDetail, "interrupted twice") {
				t.Fatalf("exit %d, %s %q; want 137 and an interrupted run; terminal: %q", code, res.FailureType, res.FailureDetail, p.output())
			}
		})
	}
}

// TestRunTTYDenialClassified: a denial at a TTY run is classified as it is
// without a terminal.
func TestRunTTYDenialClassified(t *testing.T) {
	testenv.RequireSandbox(t)
	dir := t.TempDir()
	report := filepath.Join(t.TempDir(), "r.json")
	p := startPTY(t, dir, true, "run", "--report", report, "--", "sh", "-c", "tty; echo x > /usr/cordon-tty-x")
	p.waitOut("/dev/pts/")
	code := p.wait()
	res := readReport(t, report)
	if code == 0 || res.FailureType != runner.FailureSandboxDenied || res.BlockedPath != "/usr/cordon-tty-x" {
		t.Fatalf("exit %d %s blocked %q; want sandbox_denied at /usr/cordon-tty-x; terminal: %q", code, res.FailureType, res.BlockedPath, p.output())
	}
	if _, err := os.Lstat("/usr/cordon-tty-x"); err == nil {
		t.Fatal("/usr/cordon-tty-x exists on the host")
	}
}
