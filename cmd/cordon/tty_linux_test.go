package main

import (
	"bytes"
	"io"
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
)

// TestRunInteractiveTTY drives `cordon run -- bash -i` through a real pty,
// as a person at a terminal would: the sandbox gets a terminal of its own,
// ^C reaches the foreground job (not cordon), and the exit status is bash's.
func TestRunInteractiveTTY(t *testing.T) {
	testenv.RequireSandbox(t)
	master, slave, err := console.NewPty()
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	defer master.Close()
	tty, err := os.OpenFile(slave, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cordonBin(t), "run", "--profile", "workspace", "--", "bash", "--norc", "--noprofile", "-i")
	cmd.Dir = t.TempDir()
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
		for i := 0; i < 600; i++ {
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
	send("tty; echo PTY-$((6*7))\n")
	waitOut("PTY-42")
	waitOut("/dev/pts/0")
	// /dev/tty is the command's own terminal, for writing and reading (git
	// and ssh prompts, getpass), though the broker performs write-opens.
	send("echo TTY-$((3*3)) > /dev/tty; read -r x < /dev/tty; echo GOT-$x\n")
	waitOut("TTY-9")
	send("hello\n")
	waitOut("GOT-hello")
	send("sleep 60\n")
	time.Sleep(300 * time.Millisecond)
	send("\x03") // ^C: interrupts sleep, not the sandbox
	send("echo AFTER-$((2+3))\n")
	waitOut("AFTER-5")
	send("exit 7\n")
	err = cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 7 {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("exit: %v (want status 7); terminal: %q", err, out.String())
	}
}

// TestRunForwardsSIGTERM: a SIGTERM to cordon reaches the command (through
// cordon's PID 1 in the sandbox), which handles it and sets the exit status.
func TestRunForwardsSIGTERM(t *testing.T) {
	testenv.RequireSandbox(t)
	cmd := exec.Command(cordonBin(t), "run", "--profile", "workspace", "--", "sh", "-c",
		`trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.1; done`)
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	buf := make([]byte, 64)
	n, _ := r.Read(buf)
	out.Write(buf[:n])
	if !strings.Contains(out.String(), "ready") {
		t.Fatalf("command did not start: %q", out.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest := make([]byte, 256)
	for {
		n, err := r.Read(rest)
		out.Write(rest[:n])
		if err != nil {
			break
		}
	}
	err = cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 3 || !strings.Contains(out.String(), "got-term") {
		t.Fatalf("exit %v, output %q: the command's TERM handler must run and set the status", err, out.String())
	}
}

// TestRunCannotRewriteItsConfig is the security property "a command cannot
// widen its own next run": the config named with --config, inside the
// workspace, and the audit log are out of the command's reach, and both
// files are unchanged afterwards.
func TestRunCannotRewriteItsConfig(t *testing.T) {
	testenv.RequireSandbox(t)
	ws := t.TempDir()
	cfg := filepath.Join(ws, "sb.yaml")
	orig := "sandbox:\n  root: .\naudit: audit.jsonl\n"
	if err := os.WriteFile(cfg, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCLI(t, ws, "run", "--config", cfg, "--", "sh", "-c",
		"printf 'sandbox:\\n  root: /\\n  network: true\\n' > sb.yaml; echo forged >> audit.jsonl; cat audit.jsonl")
	if res.code == 0 {
		t.Fatalf("the command rewrote its own config or log: %q", res.stderr)
	}
	if b, _ := os.ReadFile(cfg); string(b) != orig {
		t.Fatalf("config changed: %q", b)
	}
	b, _ := os.ReadFile(filepath.Join(ws, "audit.jsonl"))
	for _, line := range strings.Split(string(b), "\n") {
		if line == "forged" {
			t.Fatalf("audit log forged: %q", b)
		}
	}
	if strings.Contains(res.stdout, `"event"`) {
		t.Fatalf("the command read the audit log: %q", res.stdout)
	}
}

// TestRunRestoresTerminalOnHangup: a TTY run whose terminal hangs up
// (SIGHUP to cordon) passes the hangup on to the command and puts the
// caller's terminal back as it was: it was left raw (-icanon) before.
func TestRunRestoresTerminalOnHangup(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1)")
	}
	ws := t.TempDir()
	out := filepath.Join(t.TempDir(), "after")
	line := cordonBin(t) + " run --profile workspace -- sh -c 'echo ready; sleep 60'; echo rc=$? > " + out + "; stty -a >> " + out
	cmd := exec.Command(script, "-qfec", line, "/dev/null")
	cmd.Dir = ws
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	var seen string
	for !strings.Contains(seen, "ready") {
		n, err := stdout.Read(buf)
		if err != nil {
			t.Fatalf("no ready line: %v (%q)", err, seen)
		}
		seen += string(buf[:n])
	}
	// cordon is script's grandchild: the shell's child.
	pids, _ := exec.Command("pgrep", "-f", "-x", cordonBin(t)+" run --profile workspace -- sh -c echo ready; sleep 60").Output()
	fields := strings.Fields(string(pids))
	if len(fields) != 1 {
		t.Fatalf("cordon's pid: %q", pids)
	}
	if err := exec.Command("kill", "-HUP", fields[0]).Run(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	_ = cmd.Wait()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "rc=129") || strings.Contains(string(b), "-icanon") || !strings.Contains(string(b), "icanon") {
		t.Fatalf("after the hangup: %s; want rc=129 and the terminal canonical again", b)
	}
}
