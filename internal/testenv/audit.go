package testenv

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/cordon-run/cordon/internal/audit"
)

// ReadAudit parses every line of an audit log. A missing log reads as no
// records; a line that does not parse fails the test.
func ReadAudit(t testing.TB, path string) []audit.Record {
	t.Helper()
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []audit.Record
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q does not parse: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
