package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestReadRefusesBinary: Read returns text only; an ELF file or one with
// NUL bytes is refused with a hint to use a command, and text in another
// encoding than UTF-8 is still read.
func TestReadRefusesBinary(t *testing.T) {
	ws := t.TempDir()
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("no /bin/true to copy: %v", err)
	}
	files := map[string][]byte{
		"prog":       elf,
		"data.bin":   []byte("abc\x00def"),
		"latin1.txt": []byte("caf\xe9\n"),
		"plain.txt":  []byte("hello\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(ws, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	table, err := New(&spec.Sandbox{Root: ws, System: spec.System{Kind: spec.SystemHost}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, why string
	}{{"prog", "an ELF executable"}, {"data.bin", "NUL bytes"}} {
		_, err := table.Read(tc.name, 0)
		if !errors.Is(err, ErrBinary) || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "inspect it with a command") {
			t.Errorf("Read(%s) = %v; want ErrBinary saying %q with a hint", tc.name, err, tc.why)
		}
	}
	for _, name := range []string{"latin1.txt", "plain.txt"} {
		if text, err := table.Read(name, 0); err != nil || text != string(files[name]) {
			t.Errorf("Read(%s) = %q, %v; want the text", name, text, err)
		}
	}
}
