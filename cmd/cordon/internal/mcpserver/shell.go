package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sirupsen/logrus"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/spec"
)

// MaxOutputChars is how many characters of stdout and of stderr the shell
// tool returns; the rest is cut, and the result says so.
const MaxOutputChars = 50000

// DefaultShellTimeout is the shell tool's timeout when neither the call nor
// the sandbox sets one.
const DefaultShellTimeout = 2 * time.Minute

// ShellInput is the shell tool's input.
type ShellInput struct {
	Command string  `json:"command" jsonschema:"the command, run as /bin/sh -c COMMAND in the workspace"`
	Timeout float64 `json:"timeout,omitempty" jsonschema:"seconds before the command and every process it started are killed; at most the sandbox's own timeout"`
}

// ShellOutput is the shell tool's structured result.
type ShellOutput struct {
	ExitCode      int    `json:"exit_code"`
	FailureType   string `json:"failure_type"`
	FailureDetail string `json:"failure_detail,omitempty"`
	BlockedPath   string `json:"blocked_path,omitempty"`
	Stdout        string `json:"stdout"`
	Stderr        string `json:"stderr"`
	DurationMS    int64  `json:"duration_ms"`
	// Allowed states what the sandbox allows, when it caused the failure.
	Allowed string `json:"allowed,omitempty"`
	// Denials lists the calls the sandbox refused, from cordon's own
	// record, even when the command exited 0; DenialCount counts them all.
	Denials     []cordon.DeniedCall `json:"denials,omitempty"`
	DenialCount int                 `json:"denial_count,omitempty"`
}

func (s *Server) maxTimeout() time.Duration { return s.sb.Limits.Timeout }

func (s *Server) shellDescription() string {
	def := s.maxTimeout()
	limit := fmt.Sprintf("timeout: optional, in seconds, at most %g (the sandbox's own, also the default)", def.Seconds())
	if def <= 0 {
		limit = fmt.Sprintf("timeout: optional, in seconds (default %g)", DefaultShellTimeout.Seconds())
	}
	return "Run /bin/sh -c COMMAND inside the sandbox, in the workspace, with no stdin. " + limit + ". " +
		"Calls share one warm sandbox: files (the workspace, /tmp) persist; environment, working directory and " +
		"background processes do not. " +
		fmt.Sprintf("Returns stdout and stderr (at most %d characters each; a cut is marked), the exit code, the "+
			"failure type (none, process_error, sandbox_denied: the result says what is allowed, timeout, oom, "+
			"setup_error) and every call the sandbox refused, even when the command exited 0.", MaxOutputChars)
}

// timeout returns the run's timeout for the asked seconds (0: default).
func (s *Server) timeout(seconds float64) (time.Duration, error) {
	max := s.maxTimeout()
	switch {
	case seconds == 0:
		if max > 0 {
			return max, nil
		}
		return DefaultShellTimeout, nil
	case seconds < 0 || math.IsNaN(seconds) || math.IsInf(seconds, 0):
		return 0, &TimeoutError{Seconds: seconds, Max: max}
	case max > 0 && seconds > max.Seconds():
		return 0, &TimeoutError{Seconds: seconds, Max: max}
	}
	d := time.Duration(seconds * float64(time.Second))
	if d <= 0 {
		return 0, &TimeoutError{Seconds: seconds, Max: max}
	}
	return d, nil
}

func (s *Server) shell(ctx context.Context, call *mcp.CallToolRequest, in ShellInput) (*mcp.CallToolResult, ShellOutput, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, ShellOutput{}, fmt.Errorf("%w: give a command to run with /bin/sh -c", ErrEmptyCommand)
	}
	d, err := s.timeout(in.Timeout)
	if err != nil {
		return nil, ShellOutput{}, err
	}
	args := []string{"/bin/sh", "-c", in.Command}
	stdout, stderr := newCapture(), newCapture()
	var conn *mcp.ServerSession
	if call != nil {
		conn = call.Session
	}
	res, err := s.runShell(ctx, conn, args, stdout, stderr, d)
	if errors.Is(err, cordon.ErrNotStarted) {
		return nil, ShellOutput{}, err
	}
	notRecorded := errors.Is(err, cordon.ErrNotRecorded)
	if err != nil && !notRecorded {
		res = cordon.Result{ExitCode: cordon.ExitSetupError, FailureType: cordon.FailureSetupError, FailureDetail: err.Error()}
	}
	out := ShellOutput{
		ExitCode: res.ExitCode, FailureType: string(res.FailureType), FailureDetail: res.FailureDetail,
		BlockedPath: res.BlockedPath, DurationMS: res.DurationMS,
		Stdout: stdout.text("stdout"), Stderr: stderr.text("stderr"),
		Denials: res.Denials, DenialCount: res.DenialCount,
	}
	if res.FailureType == cordon.FailureSandboxDenied && !strings.Contains(res.FailureDetail, "writable: ") && !strings.Contains(res.FailureDetail, "readable: ") {
		// A denial whose detail already says what IS allowed is not
		// repeated: one list is enough to act on.
		out.Allowed = s.allowed()
	}
	text := formatShell(out)
	if notRecorded {
		logrus.WithError(err).Error("audit log")
		text += fmt.Sprintf("\n[cordon: %v]\n", err)
		res.FailureType = cordon.FailureSetupError
	}
	result := textResult(text)
	result.IsError = res.FailureType != cordon.FailureNone
	return result, out, nil
}

// allowed states what the sandbox allows, for a failure it caused.
func (s *Server) allowed() string {
	var b strings.Builder
	fmt.Fprintf(&b, "writable paths: %s\n", orNone(s.table.WritableRoots()))
	fmt.Fprintf(&b, "readable paths: %s\n", orNone(s.table.ReadableRoots()))
	switch n := s.sb.Network; {
	case !n.Enabled:
		b.WriteString("network access is disabled for this sandbox\n")
	case len(n.Allow) > 0:
		fmt.Fprintf(&b, "network access is limited to: %s\n", strings.Join(n.Allow, ", "))
	}
	return b.String()
}

func formatShell(o ShellOutput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d\nfailure type: %s\n", o.ExitCode, o.FailureType)
	if o.FailureType != string(cordon.FailureNone) && o.FailureDetail != "" {
		fmt.Fprintf(&b, "failure: %s\n", o.FailureDetail)
	}
	for _, st := range []struct{ name, text string }{{"stdout", o.Stdout}, {"stderr", o.Stderr}} {
		if st.text == "" {
			fmt.Fprintf(&b, "%s: (empty)\n", st.name)
			continue
		}
		fmt.Fprintf(&b, "%s:\n%s", st.name, st.text)
		if !strings.HasSuffix(st.text, "\n") {
			b.WriteByte('\n')
		}
	}
	if len(o.Denials) > 0 {
		fmt.Fprintf(&b, "refused by the sandbox (%d calls", o.DenialCount)
		if o.DenialCount > len(o.Denials) {
			fmt.Fprintf(&b, ", %d distinct listed", len(o.Denials))
		}
		b.WriteString("):\n")
		for _, d := range o.Denials {
			fmt.Fprintf(&b, "- %s %s: %s\n", d.Op, d.Path, d.Rule)
		}
	}
	if o.Allowed != "" {
		b.WriteString("the sandbox allows:\n")
		b.WriteString(o.Allowed)
	}
	return b.String()
}

// capture keeps the head and the tail of a stream (enough for
// MaxOutputChars characters in all) and counts what it drops between: the
// error at the end of a failed build matters as much as the start.
type capture struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte // a window of the last tailBytes bytes
	total int64
}

// headBytes and tailBytes are enough bytes for half of MaxOutputChars
// characters of UTF-8 each.
const (
	headBytes = MaxOutputChars / 2 * utf8.UTFMax
	tailBytes = MaxOutputChars / 2 * utf8.UTFMax
)

func newCapture() *capture { return &capture{} }

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := headBytes - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > 0 {
		c.tail = append(c.tail, p...)
		if len(c.tail) > tailBytes {
			c.tail = append(c.tail[:0], c.tail[len(c.tail)-tailBytes:]...)
		}
	}
	return n, nil
}

// text returns the stream whole when it has at most MaxOutputChars
// characters; otherwise its first and last MaxOutputChars/2 characters
// with a line between that says how much was cut.
func (c *capture) text(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	headSrc, tailSrc := string(c.head), string(c.tail)
	if int64(len(c.head)+len(c.tail)) == c.total {
		// Nothing was dropped: the stream is whole.
		all := headSrc + tailSrc
		if utf8.RuneCountInString(all) <= MaxOutputChars {
			return all
		}
		headSrc, tailSrc = all, all
	}
	half := MaxOutputChars / 2
	head, tail := firstChars(headSrc, half), lastChars(tailSrc, half)
	cut := c.total - int64(len(head)) - int64(len(tail))
	return head + fmt.Sprintf("\n[cordon: %s: %d bytes cut from the middle; the first and the last %d characters are kept]\n", name, cut, half) + tail
}

// firstChars is the first n characters of s.
func firstChars(s string, n int) string {
	chars := 0
	for i := range s {
		if chars == n {
			return s[:i]
		}
		chars++
	}
	return s
}

// lastChars is the last n characters of s, starting at a character.
func lastChars(s string, n int) string {
	i := len(s)
	for chars := 0; chars < n && i > 0; chars++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

// runShell runs one shell command in the connection's warm session, or
// cold when the backend has no sessions. The sandbox's project records it.
func (s *Server) runShell(ctx context.Context, conn *mcp.ServerSession, args []string, stdout, stderr *capture, d time.Duration) (cordon.Result, error) {
	opts := []cordon.RunOption{cordon.Stdout(stdout), cordon.Stderr(stderr), cordon.Timeout(d)}
	sess, ok, err := s.sessionFor(ctx, conn)
	if !ok {
		if s.overlay != "" {
			// Refused where there is no overlay, never run direct.
			opts = append(opts, cordon.InOverlay(s.overlay))
		}
		return s.sandbox.Run(ctx, args, opts...)
	}
	if err != nil {
		sum := spec.Summarize(s.sb)
		return cordon.SetupFailure(cordon.Result{Sandbox: &sum}, err), nil
	}
	res, err := sess.Exec(ctx, args, opts...)
	if errors.Is(err, cordon.ErrSessionGone) {
		return res, nil // typed session_gone; the next call starts a new session
	}
	return res, err
}
