package runner

import (
	"bytes"
	"strings"
	"testing"
)

func TestCappedWriterAndTail(t *testing.T) {
	var buf bytes.Buffer
	c := NewCappedWriter(&buf, 5)
	for _, s := range []string{"abc", "defg", "hij"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if buf.String() != "abcde" {
		t.Errorf("kept %q, want %q", buf.String(), "abcde")
	}
	if note := c.TruncationNote("stdout"); !strings.Contains(note, "5 bytes dropped") {
		t.Errorf("note = %q", note)
	}
	free := NewCappedWriter(&buf, 0)
	free.Write([]byte("xyz"))
	if free.TruncationNote("stdout") != "" {
		t.Error("an uncapped writer reports drops")
	}
	tail := NewTailBuffer(4)
	tail.Write([]byte("abc"))
	tail.Write([]byte("defgh"))
	if tail.String() != "efgh" {
		t.Errorf("tail = %q, want %q", tail.String(), "efgh")
	}
}
