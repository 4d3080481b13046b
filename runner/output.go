package runner

import (
	"fmt"
	"io"
	"sync"
)

// CappedWriter passes at most limit bytes to w and discards the rest,
// remembering how much it dropped (limits.output). A limit of 0 or below
// means no cap. A destination that fails is dropped, so a reader that went
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
		room := c.limit - c.written
		if room <= 0 {
			c.dropped += int64(n)
			return n, nil
		}
		if int64(len(p)) > room {
			c.dropped += int64(len(p)) - room
			p = p[:room]
		}
	}
	if c.w != nil {
		// A reader that went away must not stall or kill the command: its
		// output is simply no longer delivered.
		if _, err := c.w.Write(p); err != nil {
			c.w = nil
		}
	}
	c.written += int64(len(p))
	return n, nil
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
