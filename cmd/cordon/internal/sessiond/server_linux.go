package sessiond

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/spec"
)

// Server serves one session's socket: execs from `cordon exec` clients
// and `cordon session stop`.
type Server struct {
	// Session runs the execs and records each in the audit log.
	Session *cordon.Session
	// LogDir holds the output of detached execs (ID.log); "" discards it.
	LogDir string

	wg  sync.WaitGroup
	det detachedSet
}

// Serve accepts clients on l until the session is gone; it then closes l
// and waits for the clients being served.
func (s *Server) Serve(l *net.UnixListener) error {
	go func() {
		<-s.Session.Done()
		l.Close()
	}()
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			select {
			case <-s.Session.Done():
				s.wg.Wait()
				return nil
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				s.wg.Wait()
				return nil
			}
			logrus.WithError(err).Warn("session: accept")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			if err := s.handle(c); err != nil {
				logrus.WithError(err).Debug("session: client")
			}
		}()
	}
}

// handle serves one client connection.
func (s *Server) handle(c *net.UnixConn) error {
	if err := checkPeer(c); err != nil {
		return err
	}
	req, files, err := readRequest(c)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if err != nil {
		_, _ = c.Write(encodeResponse(cordon.ExitSetupError, fmt.Sprintf("cordon: %v\n", err), nil))
		return err
	}
	switch req.typ {
	case reqStop:
		err := s.Session.Close()
		msg := ""
		code := 0
		if err != nil {
			msg, code = fmt.Sprintf("cordon: %v\n", err), cordon.ExitSetupError
		}
		_, werr := c.Write(encodeResponse(code, msg, nil))
		return werr
	case reqPs:
		_, err := c.Write(encodeResponse(0, s.ps(), nil))
		return err
	case reqKill:
		code, msg := s.kill(req.opts["id"])
		_, err := c.Write(encodeResponse(code, msg, nil))
		return err
	case reqExec:
		if len(files) != 3 {
			_, _ = c.Write(encodeResponse(cordon.ExitSetupError, "cordon: an exec request must carry stdin, stdout and stderr\n", nil))
			return fmt.Errorf("%w: exec with %d descriptors", ErrProtocol, len(files))
		}
		code, msg, report := s.exec(c, req, files)
		// The output is drained: let go of the client's stdio before it
		// hears back, so whoever reads its pipes sees EOF when it exits.
		for _, f := range files {
			f.Close()
		}
		files = nil
		_, err := c.Write(encodeResponse(code, msg, report))
		return err
	}
	return fmt.Errorf("%w: request type %d", ErrProtocol, req.typ)
}

// exec runs one client's command; it returns the exit code, the message
// for the client's stderr and the JSON report, as `cordon run` would give
// them.
func (s *Server) exec(c *net.UnixConn, req *request, files []*os.File) (int, string, []byte) {
	if len(req.argv) == 0 || req.argv[0] == "" {
		return 2, "cordon exec: no command given; fix: cordon exec NAME [flags] -- CMD [ARG...]\n", nil
	}
	dir, err := s.workDir(req.opts["cwd"], req.opts["wd"], files[2])
	if err != nil {
		return 2, err.Error() + "\n", nil
	}
	opts := []cordon.RunOption{cordon.Env(req.env), cordon.Dir(dir)}
	if t := req.opts["timeout"]; t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return 2, fmt.Sprintf("cordon exec: --timeout %q is not a duration above zero; fix: give one with a unit, such as 30s or 5m\n", t), nil
		}
		opts = append(opts, cordon.Timeout(d))
	}
	if m := req.opts["memory"]; m != "" {
		n, err := spec.ParseBytes(m)
		if err != nil || n <= 0 {
			return 2, fmt.Sprintf("cordon exec: --memory %q is not a size above zero; fix: give one such as 256MiB or 1GiB\n", m), nil
		}
		opts = append(opts, cordon.ExecMemory(n))
	}
	if req.opts["detach"] == "1" {
		return s.startDetached(req, opts, files[1])
	}
	opts = append(opts, cordon.Stdin(files[0]), cordon.Stdout(files[1]), cordon.Stderr(files[2]))
	var size atomic.Uint32
	if req.opts["tty"] == "1" {
		cols, _ := strconv.ParseUint(req.opts["cols"], 10, 16)
		rows, _ := strconv.ParseUint(req.opts["rows"], 10, 16)
		size.Store(uint32(cols)<<16 | uint32(rows))
		opts = append(opts, cordon.Terminal(func() (uint16, uint16, bool) {
			v := size.Load()
			return uint16(v >> 16), uint16(v), v != 0
		}))
		// What the client's terminal held when the client made it raw.
		if in, err := hex.DecodeString(req.opts["input"]); err == nil && len(in) > 0 {
			opts = append(opts, cordon.TypeAhead(in))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan int, 4)
	opts = append(opts, cordon.Signals(sigs))
	go clientSignals(c, sigs, &size, cancel)

	res, err := s.Session.Exec(ctx, req.argv, opts...)
	if errors.Is(err, cordon.ErrNotStarted) {
		return cordon.ExitSetupError, fmt.Sprintf("cordon: %v\n", err), nil
	}
	msg := ""
	switch res.FailureType {
	case cordon.FailureNone, cordon.FailureProcessError:
	default:
		msg = fmt.Sprintf("cordon: %s: %s\n", res.FailureType, res.FailureDetail)
	}
	code := res.ExitCode
	if errors.Is(err, cordon.ErrNotRecorded) {
		msg += fmt.Sprintf("cordon: %v\n", err)
		code = cordon.ExitSetupError
	}
	if req.opts["report"] != "1" {
		return code, msg, nil // the client wants no report (no --report, no --json)
	}
	if req.opts["sandbox"] != "1" {
		res.Sandbox = nil // the client did not ask for it (--sandbox)
	}
	report, _ := json.MarshalIndent(res, "", "  ")
	return code, msg, append(report, '\n')
}

// workDir is the exec's working directory, chosen as `cordon run` chooses
// it: --cwd (a sandbox path; relative: under the workspace), checked, or
// else the client's own directory wd when the sandbox shows that host
// directory at the same path, or else the workspace, with a note on the
// client's stderr saying so.
func (s *Server) workDir(cwd, wd string, stderr *os.File) (string, error) {
	sb := s.Session.Sandbox()
	if cwd != "" {
		dir, err := sb.CheckDir(cwd)
		if err != nil {
			return "", fmt.Errorf("cordon exec: --cwd %s: %w; fix: give a directory inside the sandbox (cordon explain lists them)", cwd, err)
		}
		return dir, nil
	}
	dir, inside := sb.WorkDir(wd)
	if !inside && wd != "" {
		fmt.Fprintf(stderr, "cordon: note: the current directory %s is not in the sandbox; the command runs in %s (--cwd DIR to choose)\n", wd, dir)
	}
	return dir, nil
}

// clientSignals reads the client's signal frames until it closes its end
// or disconnects, which cancels the exec. A second SIGINT or SIGTERM
// cancels it too, as for `cordon run`.
func clientSignals(c *net.UnixConn, sigs chan<- int, size *atomic.Uint32, cancel func()) {
	defer cancel()
	b := make([]byte, sigFrame)
	interrupts := 0
	for {
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		switch binary.NativeEndian.Uint32(b[0:]) {
		case sigMagic:
		case winchMagic:
			// The client's terminal changed size: cols<<16 | rows.
			size.Store(binary.NativeEndian.Uint32(b[4:]))
			select {
			case sigs <- int(unix.SIGWINCH):
			default:
			}
			continue
		default:
			return
		}
		sig := int(int32(binary.NativeEndian.Uint32(b[4:])))
		if sig <= 0 || sig >= 65 {
			continue
		}
		if sig == int(unix.SIGINT) || sig == int(unix.SIGTERM) {
			interrupts++
			if interrupts > 1 {
				return
			}
		}
		select {
		case sigs <- sig:
		default:
		}
	}
}

// checkPeer refuses a client of another uid, and one outside the
// supervisor's PID namespace: a process inside a sandbox (this session's
// or another's: a rootless run with another TMPDIR can mount this state
// directory) is never a client, even of its own uid. The socket's
// directory already is private; these are the second lock. It is the
// check the clients make of the server (Dir.checkServer and
// cmd/cordon/execserver_linux.c), the other way round.
func checkPeer(c *net.UnixConn) error {
	cred, err := peerCred(c)
	if err != nil {
		return err
	}
	if int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("session: refused a client of uid %d", cred.Uid)
	}
	return checkPeerNamespace(c, int(cred.Pid))
}

// checkPeerNamespace refuses a peer (pid, as SO_PEERCRED gives it) that is
// not in this process's PID namespace. Its pidfd (SO_PEERPIDFD, Linux 6.5)
// pins it: the peer is checked to be alive after its /proc entry was read,
// so that entry was not a later process's with the same pid.
func checkPeerNamespace(c *net.UnixConn, pid int) error {
	if pid <= 0 {
		return fmt.Errorf("session: refused a client with no pid in this PID namespace")
	}
	pidfd := -1
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			if v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
				pidfd = v
			}
		})
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	n, err := nsPIDs(pid)
	if err != nil {
		return fmt.Errorf("session: refused client pid %d: %w", pid, err)
	}
	if n != 1 {
		return fmt.Errorf("session: refused client pid %d: it runs in another PID namespace (inside a sandbox)", pid)
	}
	if pidfd >= 0 {
		if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
			return fmt.Errorf("session: refused client pid %d: it is gone (%w)", pid, err)
		}
	}
	return nil
}

// readRequest reads one request and the descriptors sent with it.
func readRequest(c *net.UnixConn) (*request, []*os.File, error) {
	h := make([]byte, reqHeader)
	var files []*os.File
	got := 0
	for got < reqHeader {
		oob := make([]byte, unix.CmsgSpace(4*4))
		n, oobn, _, _, err := c.ReadMsgUnix(h[got:], oob)
		if oobn > 0 {
			files = append(files, parseRights(oob[:oobn])...)
		}
		if err != nil {
			return nil, files, err
		}
		if n == 0 {
			return nil, files, io.ErrUnexpectedEOF
		}
		got += n
	}
	typ, nopts, nargv, nenv, n, err := decodeHeader(h)
	if err != nil {
		return nil, files, err
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(c, p); err != nil {
		return nil, files, err
	}
	req, err := decodePayload(typ, nopts, nargv, nenv, p)
	return req, files, err
}

func parseRights(oob []byte) []*os.File {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var out []*os.File
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			out = append(out, os.NewFile(uintptr(fd), "client"))
		}
	}
	return out
}

// Stop asks the supervisor of session name to end it, and waits until it
// has removed everything.
func (d *Dir) Stop(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: d.SocketPath(name), Net: "unix"})
	if err != nil {
		return fmt.Errorf("%w: %s", ErrNotRunning, name)
	}
	defer c.Close()
	if err := d.checkServer(c, name); err != nil {
		return err
	}
	msg, err := encodeRequest(reqStop, nil, nil, nil)
	if err != nil {
		return err
	}
	if _, err := c.Write(msg); err != nil {
		return err
	}
	code, text, _, err := readResponse(c)
	if err != nil {
		return fmt.Errorf("session %s: %w", name, err)
	}
	if code != 0 {
		return fmt.Errorf("session %s: %s", name, text)
	}
	// The supervisor removes the session's directory as it exits.
	for i := 0; i < 500 && d.alive(name); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// Listen creates the socket of a claimed session.
func (d *Dir) Listen(name string) (*net.UnixListener, error) {
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: d.SocketPath(name), Net: "unix"})
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(false)
	return l, nil
}
