package decide

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestParseConfigAsGit reads hostile configs with parseConfig and with the
// real git (git config -f FILE --list -z): where git reads one, parseConfig
// must give exactly git's keys and values, in order, or refuse it as a
// form it does not decide; where git refuses one, so must parseConfig.
func TestParseConfigAsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name, cfg string
		stricter  bool // git reads it; parseConfig refuses it
	}{
		{"plain", "[core]\n\tbare = false\n\thooksPath = .githooks\n[remote \"origin\"]\n\turl = /src/app\n", false},
		{"trailing vertical tab kept", "[core]\n\thooksPath = hk\v\n", false},
		{"trailing form feed kept", "[core]\n\thooksPath = hk\f\n", false},
		{"leading no-break space kept", "[core]\n\thooksPath = \u00a0hk\n", false},
		{"trailing spaces and tabs trimmed", "[core]\n\thooksPath = hk \t \n", false},
		{"quotes anywhere", "[core]\n\tworktree = ../.\".\"/x\"y\"\n", false},
		{"quoted spaces kept", "[core]\n\tpager = \"  a  \"\n", false},
		{"comments after a value", "[core]\n\tpager = a # b\n\teditor = c;d\n\tx = \"e#f\"\n", false},
		{"escapes", "[core]\n\tpager = a\\tb\\\\c\\\"d\\ne\\bf\n", false},
		{"an unknown escape", "[core]\n\tpager = a\\qb\n", false},
		{"a continued value", "[core]\n\tpager = a\\\nb\n[x]\n", true},
		{"a continuation at the end", "[core]\n\tpager = a\\", true},
		{"a quote left open", "[core]\n\tpager = \"a\n", false},
		{"CRLF", "[core]\r\n\tpager = a\r\n\tbare\r\n", false},
		{"a lone CR in a value", "[core]\n\tpager = a\rb\n", true},
		{"a tab between words", "[core]\n\tpager = a \tb\n", true},
		{"spaces between words", "[core]\n\tpager = a  b \t\n", false},
		{"a key on the header's line", "[core] pager = a\n[remote \"o\"]url = b\n", false},
		{"a bare key", "[core]\n\tbare\n\tfilemode=\n", false},
		{"keys and sections in capitals", "[Core]\n\tHooksPath = A\n[Submodule \"Lib\"]\n\tURL = b\n", false},
		{"a subsection with escapes", "[submodule \"a\\\"b\\\\c\\d]\"]\n\turl = x\n", false},
		{"a subsection over lines", "[submodule \"a\nb\"]\n\turl = x\n", false},
		{"an unquoted subsection", "[submodule lib]\n\turl = x\n", false},
		{"more after a subsection", "[submodule \"lib\" ]\n\turl = x\n", false},
		{"a tab before the subsection", "[submodule\t\"lib\"]\n\turl = x\n", false},
		{"a key with a bad character", "[core]\n\thooks.path = x\n", false},
		{"a key that starts with a digit", "[core]\n\t1x = y\n", false},
		{"a vertical tab before a key", "[core]\n\v\thooksPath = x\n", false},
		{"a no-break space before a key", "[core]\n\u00a0hooksPath = x\n", false},
		{"text after a key", "[core]\n\thooksPath x\n", false},
		{"a value with nothing after it", "[core]\n\tpager =", false},
		{"comment lines", "# a\n; b\n[core] ; c\n\tpager = x # d\n", false},
		{"a header with no end", "[core\n\tpager = x\n", false},
		{"the old form", "[core.x]\n\tpager = x\n", true},
		{"a byte order mark", "\xef\xbb\xbf[core]\n\tpager = x\n", true},
		{"a NUL in a value", "[core]\n\tpager = a\x00b\n", true},
		{"a key before any section", "pager = x\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, strconv.Quote(tc.name))
			if err := os.WriteFile(f, []byte(tc.cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("git", "config", "-f", f, "--list", "-z")
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, gitErr := cmd.Output()
			entries, err := parseConfig([]byte(tc.cfg))
			switch {
			case gitErr != nil && stderr.Len() == 0:
				t.Fatalf("git config: %v", gitErr)
			case gitErr != nil:
				if err == nil {
					t.Errorf("git refuses it (%s), parseConfig reads %+v", strings.TrimSpace(stderr.String()), entries)
				}
				return
			case tc.stricter:
				if !errors.Is(err, errConfigForm) {
					t.Errorf("parseConfig = %+v, %v; want a refusal of the form", entries, err)
				}
				return
			case err != nil:
				t.Fatalf("git reads it, parseConfig refuses it: %v", err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, gitListed(e))
			}
			want := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Errorf("parseConfig reads\n%q\ngit reads\n%q", got, want)
			}
		})
	}
}

// gitListed is e as git config --list -z prints it: key, then a newline
// and the value unless the key is bare.
func gitListed(e configEntry) string {
	k := e.key
	if i := strings.IndexByte(k, '"'); i >= 0 {
		j := strings.LastIndexByte(k, '"')
		sub, err := strconv.Unquote(k[i : j+1])
		if err != nil {
			return "unquotable " + k
		}
		k = k[:i] + sub + k[j+1:]
	}
	if e.bare {
		return k
	}
	return k + "\n" + e.val
}
