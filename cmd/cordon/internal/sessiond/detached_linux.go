package sessiond

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon"
)

// `cordon exec --detach` returns as soon as the command started, as
// `docker exec -d` does: the supervisor runs it in the background with
// stdin from /dev/null and its output in a log file of the session's own
// directory (never the client's pipes, which a caller reading them to EOF
// would wait on), and `cordon session ps` and `cordon session kill` list
// and stop it. What the command started outlives it (cordon.Detach) until
// it is killed or the session ends.

// maxDetached bounds how many detached execs a session remembers; the
// oldest that ended are forgotten first.
const maxDetached = 100

// detached is one detached exec.
type detached struct {
	id      int
	argv    []string
	started time.Time
	log     string
	cancel  context.CancelFunc
	done    chan struct{}
	res     cordon.Result // set when done is closed
}

// detachedSet is a session's detached execs.
type detachedSet struct {
	mu   sync.Mutex
	next int
	m    map[int]*detached
}

// startDetached runs argv in the background with opts (the exec's
// environment, directory, timeout and memory) and writes its id on out,
// the client's stdout. It returns the exit code and the message for the
// client.
func (s *Server) startDetached(req *request, opts []cordon.RunOption, out *os.File) (int, string, []byte) {
	s.det.mu.Lock()
	if s.det.m == nil {
		s.det.m = map[int]*detached{}
	}
	s.det.next++
	d := &detached{id: s.det.next, argv: req.argv, started: time.Now(), done: make(chan struct{})}
	s.forgetEnded()
	s.det.m[d.id] = d
	s.det.mu.Unlock()

	logf, err := s.detachedLog(d.id)
	if err != nil {
		s.drop(d.id)
		return cordon.ExitSetupError, fmt.Sprintf("cordon exec --detach: the log file: %v\n", err), nil
	}
	d.log = logf.Name()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		logf.Close()
		s.drop(d.id)
		return cordon.ExitSetupError, fmt.Sprintf("cordon exec --detach: %v\n", err), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	opts = append(opts, cordon.Stdin(devNull), cordon.Stdout(logf), cordon.Stderr(logf), cordon.Detach())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer devNull.Close()
		defer logf.Close()
		res, err := s.Session.Exec(ctx, req.argv, opts...)
		if err != nil && res.FailureDetail == "" {
			res = cordon.Result{ExitCode: cordon.ExitSetupError, FailureType: cordon.FailureSetupError, FailureDetail: err.Error()}
		}
		d.res = res
		close(d.done)
	}()
	fmt.Fprintf(out, "%d\n", d.id)
	if req.opts["report"] != "1" {
		return 0, "", nil
	}
	return 0, "", []byte(fmt.Sprintf("{\n  \"exit_code\": 0,\n  \"failure_type\": \"none\",\n  \"detached_id\": %d,\n  \"log\": %q\n}\n", d.id, d.log))
}

// detachedLog creates the log file of detached exec id in the session's
// own directory (LogDir), or returns /dev/null when there is none.
func (s *Server) detachedLog(id int) (*os.File, error) {
	if s.LogDir == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	if err := os.Mkdir(s.LogDir, 0o700); err != nil && !os.IsExist(err) {
		return nil, err
	}
	return os.OpenFile(filepath.Join(s.LogDir, strconv.Itoa(id)+".log"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
}

func (s *Server) drop(id int) {
	s.det.mu.Lock()
	defer s.det.mu.Unlock()
	delete(s.det.m, id)
}

// forgetEnded drops the oldest ended execs beyond maxDetached; s.det.mu
// is held.
func (s *Server) forgetEnded() {
	if len(s.det.m) < maxDetached {
		return
	}
	ids := make([]int, 0, len(s.det.m))
	for id := range s.det.m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		if len(s.det.m) < maxDetached {
			return
		}
		select {
		case <-s.det.m[id].done:
			os.Remove(s.det.m[id].log)
			delete(s.det.m, id)
		default:
		}
	}
}

// ps lists the session's detached execs: id, state, start, log, command.
func (s *Server) ps() string {
	s.det.mu.Lock()
	list := make([]*detached, 0, len(s.det.m))
	for _, d := range s.det.m {
		list = append(list, d)
	}
	s.det.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tSTARTED\tLOG\tCOMMAND")
	for _, d := range list {
		state := "running"
		select {
		case <-d.done:
			state = fmt.Sprintf("exited %d", d.res.ExitCode)
			if d.res.FailureType != cordon.FailureNone && d.res.FailureType != cordon.FailureProcessError {
				state += " (" + string(d.res.FailureType) + ")"
			}
		default:
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", d.id, state, d.started.Local().Format(time.TimeOnly), d.log, strings.Join(d.argv, " "))
	}
	_ = tw.Flush()
	return b.String()
}

// kill stops detached exec id: it and every process it started are killed,
// and kill returns once they are gone.
func (s *Server) kill(id string) (int, string) {
	n, err := strconv.Atoi(id)
	s.det.mu.Lock()
	d := s.det.m[n]
	s.det.mu.Unlock()
	if err != nil || d == nil {
		return 1, fmt.Sprintf("cordon session kill: no detached exec %q in this session; cordon session ps NAME lists them\n", id)
	}
	d.cancel()
	<-d.done
	return 0, ""
}

// Ps returns the detached execs of session name, as a table.
func (d *Dir) Ps(name string) (string, error) {
	code, text, err := d.ask(name, reqPs, nil)
	if err == nil && code != 0 {
		err = fmt.Errorf("session %s: %s", name, strings.TrimSpace(text))
	}
	return text, err
}

// Kill stops the detached exec id of session name (an id `cordon exec
// --detach` printed), with every process it started.
func (d *Dir) Kill(name, id string) error {
	code, text, err := d.ask(name, reqKill, map[string]string{"id": id})
	if err == nil && code != 0 {
		err = fmt.Errorf("%w: %s", ErrNoDetached, strings.TrimSpace(text))
	}
	return err
}

// ask sends session name a request of type typ and returns its answer.
func (d *Dir) ask(name string, typ uint16, opts map[string]string) (int, string, error) {
	if err := CheckName(name); err != nil {
		return 0, "", err
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: d.SocketPath(name), Net: "unix"})
	if err != nil {
		return 0, "", fmt.Errorf("%w: %s", ErrNotRunning, name)
	}
	defer c.Close()
	if err := d.checkServer(c, name); err != nil {
		return 0, "", err
	}
	msg, err := encodeRequest(typ, opts, nil, nil)
	if err != nil {
		return 0, "", err
	}
	if _, err := c.Write(msg); err != nil {
		return 0, "", err
	}
	code, text, _, err := readResponse(c)
	if err != nil {
		return 0, "", fmt.Errorf("session %s: %w", name, err)
	}
	return code, text, nil
}
