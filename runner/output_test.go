package runner

import (
	"bytes"
	"fmt"
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
	if want := "abcde" + fmt.Sprintf(CutMarker, 5); buf.String() != want {
		t.Errorf("kept %q, want %q", buf.String(), want)
	}
	if note := c.TruncationNote("stdout"); !strings.Contains(note, "5 bytes dropped") {
		t.Errorf("note = %q", note)
	}
	if !c.Truncated() {
		t.Error("a cut writer does not say it was cut")
	}
	var notes bytes.Buffer
	if !ReportTruncation(&notes, NewCappedWriter(nil, 0), c) || !strings.Contains(notes.String(), "stderr cut at 5 bytes") {
		t.Errorf("ReportTruncation: %q", notes.String())
	}
	exact := NewCappedWriter(&bytes.Buffer{}, 3)
	exact.Write([]byte("abc"))
	if exact.Truncated() || ReportTruncation(nil, exact, exact) {
		t.Error("output of exactly the limit reported as cut")
	}
	free := NewCappedWriter(&buf, 0)
	free.Write([]byte("xyz"))
	if free.TruncationNote("stdout") != "" || free.Truncated() {
		t.Error("an uncapped writer reports drops")
	}
	tail := NewTailBuffer(4)
	tail.Write([]byte("abc"))
	tail.Write([]byte("defgh"))
	if tail.String() != "efgh" {
		t.Errorf("tail = %q, want %q", tail.String(), "efgh")
	}
}
