package runner

import (
	"fmt"
	"io"
	"sync"
)

// CappedWriter passes at most limit bytes to w and discards the rest,
// remembering how much it dropped (limits.output); where it cuts, it writes
// a marker (CutMarker) into the stream, so a reader of the stream alone
// sees that it is incomplete. A limit of 0 or below means no cap. A destination that fails is dropped, so a reader that went
// away never stalls or kills the command. Every backend uses it.
type CappedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	limit   int64
	written int64
	dropped int64
}

// NewCappedWriter caps what reaches w at limit bytes.
func NewCappedWriter(w io.Writer, limit int64) *CappedWriter {
	return &CappedWriter{w: w, limit: limit}
}

// Write implements io.Writer; it never fails.
func (c *CappedWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if c.limit > 0 {
		room := max(c.limit-c.written, 0)
		if int64(len(p)) > room {
			cut := c.dropped == 0
			c.dropped += int64(len(p)) - room
			p = p[:room]
			c.deliver(p)
			c.written += int64(len(p))
			if cut {
				c.deliver([]byte(fmt.Sprintf(CutMarker, c.limit)))
			}
			return n, nil
		}
	}
	c.deliver(p)
	c.written += int64(len(p))
	return n, nil
}

// CutMarker is what a CappedWriter writes into its stream where it cuts
// it (the argument is limits.output in bytes).
const CutMarker = "\n[cordon: output cut here at %d bytes by limits.output]\n"

// deliver writes p to the destination. A reader that went away must not
// stall or kill the command: its output is simply no longer delivered.
func (c *CappedWriter) deliver(p []byte) {
	if c.w == nil || len(p) == 0 {
		return
	}
	if _, err := c.w.Write(p); err != nil {
		c.w = nil
	}
}

// Truncated reports whether anything was cut.
func (c *CappedWriter) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped > 0
}

// ReportTruncation writes the note of each cut stream to w (when not nil)
// and reports whether any output was cut: the result's output_truncated.
func ReportTruncation(w io.Writer, stdout, stderr *CappedWriter) bool {
	cut := false
	for _, s := range []struct {
		c    *CappedWriter
		name string
	}{{stdout, "stdout"}, {stderr, "stderr"}} {
		if n := s.c.TruncationNote(s.name); n != "" {
			cut = true
			if w != nil {
				_, _ = io.WriteString(w, n)
			}
		}
	}
	return cut
}

// TruncationNote is the line that tells the reader stream was cut, or ""
// when nothing was dropped.
func (c *CappedWriter) TruncationNote(stream string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped == 0 {
		return ""
	}
	return fmt.Sprintf("[cordon: %s cut at %d bytes by limits.output; %d bytes dropped]\n", stream, c.limit, c.dropped)
}

// StderrTail is how much of a command's stderr every backend keeps for
// classification.
const StderrTail = 64 << 10

// TailBuffer keeps the last max bytes written to it: the stderr that denial
// classification reads.
type TailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTailBuffer keeps the last max bytes.
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

// Write implements io.Writer.
func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// String returns the bytes kept.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
