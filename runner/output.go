package runner

import (
	"fmt"
	"io"
	"sync"
)

// cappedWriter passes at most limit bytes to w and discards the rest,
// remembering how much it dropped. A limit of 0 or below means no cap.
type cappedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	limit   int64
	written int64
	dropped int64
}

func (c *cappedWriter) Write(p []byte) (int, error) {
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

func (c *cappedWriter) truncationNote(stream string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped == 0 {
		return ""
	}
	return fmt.Sprintf("[cordon: %s cut at %d bytes by limits.output; %d bytes dropped]\n", stream, c.limit, c.dropped)
}

// tailBuffer keeps the last max bytes written to it, for classification.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
