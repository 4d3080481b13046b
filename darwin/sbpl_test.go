package darwin

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// A small SBPL reader and evaluator, written for the tests: it reads the
// subset of the language that Profile may emit, refuses everything else,
// and decides an operation on a path as Seatbelt does, the last matching
// rule winning.

// sexp is a parsed S-expression.
type sexp struct {
	kind string // "list", "symbol", "string", "regex"
	text string // symbol text, or the decoded string or regex
	list []*sexp
}

func (s *sexp) String() string {
	switch s.kind {
	case "list":
		parts := make([]string, len(s.list))
		for i, e := range s.list {
			parts[i] = e.String()
		}
		return "(" + strings.Join(parts, " ") + ")"
	case "string":
		return fmt.Sprintf("%q", s.text)
	case "regex":
		return `#"` + s.text + `"`
	default:
		return s.text
	}
}

// parseSBPL reads a whole profile into its top-level forms. Strings honour
// only the \\ and \" escapes; regex literals #"..." hold neither a backslash
// nor a quote; a comment runs from ';' to the end of the line.
func parseSBPL(src string) ([]*sexp, error) {
	p := &sbplReader{src: src}
	var forms []*sexp
	for {
		p.skip()
		if p.pos >= len(p.src) {
			return forms, nil
		}
		e, err := p.read()
		if err != nil {
			return nil, err
		}
		forms = append(forms, e)
	}
}

type sbplReader struct {
	src string
	pos int
}

func (p *sbplReader) skip() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == ';':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *sbplReader) read() (*sexp, error) {
	p.skip()
	if p.pos >= len(p.src) {
		return nil, fmt.Errorf("unexpected end of profile")
	}
	switch c := p.src[p.pos]; {
	case c == '(':
		p.pos++
		l := &sexp{kind: "list"}
		for {
			p.skip()
			if p.pos >= len(p.src) {
				return nil, fmt.Errorf("unbalanced '(' ")
			}
			if p.src[p.pos] == ')' {
				p.pos++
				return l, nil
			}
			e, err := p.read()
			if err != nil {
				return nil, err
			}
			l.list = append(l.list, e)
		}
	case c == ')':
		return nil, fmt.Errorf("unbalanced ')' at byte %d", p.pos)
	case c == '"':
		p.pos++
		var b strings.Builder
		for {
			if p.pos >= len(p.src) {
				return nil, fmt.Errorf("unterminated string")
			}
			c := p.src[p.pos]
			p.pos++
			switch {
			case c == '"':
				return &sexp{kind: "string", text: b.String()}, nil
			case c == '\\':
				if p.pos >= len(p.src) || (p.src[p.pos] != '\\' && p.src[p.pos] != '"') {
					return nil, fmt.Errorf("unknown escape in string at byte %d", p.pos)
				}
				b.WriteByte(p.src[p.pos])
				p.pos++
			case c < 0x20 || c == 0x7f:
				return nil, fmt.Errorf("control character %#x in string", c)
			default:
				b.WriteByte(c)
			}
		}
	case c == '#' && strings.HasPrefix(p.src[p.pos:], `#"`):
		p.pos += 2
		end := strings.IndexByte(p.src[p.pos:], '"')
		if end < 0 {
			return nil, fmt.Errorf("unterminated regex")
		}
		re := p.src[p.pos : p.pos+end]
		p.pos += end + 1
		if strings.ContainsAny(re, "\\\n\r") {
			return nil, fmt.Errorf("regex %q holds a backslash or a newline", re)
		}
		return &sexp{kind: "regex", text: re}, nil
	default:
		start := p.pos
		for p.pos < len(p.src) && !strings.ContainsRune(" \t\r\n()\";", rune(p.src[p.pos])) {
			p.pos++
		}
		return &sexp{kind: "symbol", text: p.src[start:p.pos]}, nil
	}
}

// allowedOps are the operations a profile may name.
var allowedOps = map[string]bool{
	"process-fork": true, "process-exec": true, "process-info*": true, "signal": true,
	"sysctl-read": true, "mach-lookup": true, "ipc-posix-shm-read-data": true,
	"file-read*": true, "file-write*": true, "file-read-metadata": true, "file-ioctl": true,
	"system-socket": true, "network*": true, "network-outbound": true, "network-inbound": true, "network-bind": true, "file-link": true,
}

// sbRule is one parsed rule.
type sbRule struct {
	action  string
	ops     []string
	filter  string // "literal", "subpath", "regex", "global-name", ... or ""
	arg     string
	re      *regexp.Regexp
	message string
	src     string
}

// sbProfile is a parsed, checked profile.
type sbProfile struct {
	tag   string
	rules []sbRule // without (version 1) and (deny default)
}

// readProfile parses src and checks that it is a well-formed profile made
// only of allowed operations, filters and modifiers, with tag on every deny
// rule and on no allow rule.
func readProfile(src, tag string) (*sbProfile, error) {
	forms, err := parseSBPL(src)
	if err != nil {
		return nil, err
	}
	if len(forms) < 2 || forms[0].String() != "(version 1)" {
		return nil, fmt.Errorf("profile does not start with (version 1)")
	}
	if got, want := forms[1].String(), fmt.Sprintf("(deny default (with message %q))", tag); got != want {
		return nil, fmt.Errorf("second form is %s, want %s", got, want)
	}
	prof := &sbProfile{tag: tag}
	for _, f := range forms[2:] {
		r, err := checkRule(f, tag)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		prof.rules = append(prof.rules, r)
	}
	return prof, nil
}

func checkRule(f *sexp, tag string) (sbRule, error) {
	r := sbRule{src: f.String()}
	if f.kind != "list" || len(f.list) < 2 || f.list[0].kind != "symbol" {
		return r, fmt.Errorf("not a rule")
	}
	r.action = f.list[0].text
	if r.action != "allow" && r.action != "deny" {
		return r, fmt.Errorf("unknown action %q", r.action)
	}
	rest := f.list[1:]
	for len(rest) > 0 && rest[0].kind == "symbol" {
		if !allowedOps[rest[0].text] {
			return r, fmt.Errorf("operation %q is not allowed", rest[0].text)
		}
		r.ops = append(r.ops, rest[0].text)
		rest = rest[1:]
	}
	if len(r.ops) == 0 {
		return r, fmt.Errorf("no operation")
	}
	for _, e := range rest {
		if e.kind != "list" || len(e.list) == 0 || e.list[0].kind != "symbol" {
			return r, fmt.Errorf("unexpected %s", e)
		}
		head, args := e.list[0].text, e.list[1:]
		one := func(kind string) (string, error) {
			if len(args) != 1 || args[0].kind != kind {
				return "", fmt.Errorf("(%s) wants one %s", head, kind)
			}
			return args[0].text, nil
		}
		var err error
		switch head {
		case "with":
			if len(args) != 2 || args[0].kind != "symbol" || args[0].text != "message" || args[1].kind != "string" {
				return r, fmt.Errorf("bad modifier %s", e)
			}
			r.message = args[1].text
			continue
		case "literal", "subpath":
			r.arg, err = one("string")
			if err == nil && !strings.HasPrefix(r.arg, "/") {
				err = fmt.Errorf("path %q is not absolute", r.arg)
			}
		case "regex":
			r.arg, err = one("regex")
			if err == nil && (!strings.HasPrefix(r.arg, "^") || !strings.HasSuffix(r.arg, "$")) {
				err = fmt.Errorf("regex %q is not anchored", r.arg)
			}
			if err == nil {
				r.re, err = regexp.Compile(r.arg)
			}
		case "global-name", "ipc-posix-name":
			r.arg, err = one("string")
		case "target":
			r.arg, err = one("symbol")
			if err == nil && r.arg != "same-sandbox" {
				err = fmt.Errorf("target %q", r.arg)
			}
		case "remote", "local":
			// Any IP endpoint, or TCP to one port of localhost (a run's
			// proxy).
			switch {
			case len(args) == 2 && args[0].kind == "symbol" && args[0].text == "ip" && args[1].kind == "string" && args[1].text == "*:*":
				r.arg = "ip *:*"
			case head == "remote" && len(args) == 2 && args[0].kind == "symbol" && args[0].text == "tcp" && args[1].kind == "string" && localhostPort().MatchString(args[1].text):
				r.arg = "tcp " + args[1].text
			default:
				err = fmt.Errorf("(%s) wants ip \"*:*\" or tcp \"localhost:PORT\"", head)
			}
		case "socket-domain":
			r.arg, err = one("symbol")
			if err == nil && r.arg != "AF_UNIX" && r.arg != "AF_INET" && r.arg != "AF_INET6" {
				err = fmt.Errorf("socket-domain %q", r.arg)
			}
		default:
			err = fmt.Errorf("filter %q is not allowed", head)
		}
		if err != nil {
			return r, err
		}
		if r.filter != "" {
			return r, fmt.Errorf("more than one filter")
		}
		r.filter = head
	}
	if r.action == "deny" && r.message != tag {
		return r, fmt.Errorf("deny rule without the tag")
	}
	if r.action == "allow" && r.message != "" {
		return r, fmt.Errorf("allow rule with a message")
	}
	if r.action == "allow" && r.filter == "" {
		for _, op := range r.ops {
			if strings.HasPrefix(op, "file-") {
				return r, fmt.Errorf("unfiltered allow of %s", op)
			}
		}
	}
	return r, nil
}

// localhostPort is the endpoint of a (remote tcp ...) filter.
var localhostPort = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^localhost:[0-9]{1,5}$`) })

// covers reports whether rule operation ruleOp applies to operation op.
func covers(ruleOp, op string) bool {
	if strings.HasSuffix(ruleOp, "*") {
		return strings.HasPrefix(op, strings.TrimSuffix(ruleOp, "*"))
	}
	return ruleOp == op
}

// matchesPath reports whether the rule's filter matches path. Non-path
// filters never match a path.
func (r *sbRule) matchesPath(path string) bool {
	switch r.filter {
	case "":
		return true
	case "literal":
		return path == r.arg
	case "subpath":
		return isUnder(path, r.arg)
	case "regex":
		return r.re.MatchString(path)
	case "remote", "local":
		// (remote ip "*:*") matches any IP endpoint (path "", or "tcp
		// HOST:PORT" for one endpoint) and no socket path; (remote tcp
		// "localhost:PORT") matches that endpoint only.
		if r.arg == "ip *:*" {
			return path == "" || strings.HasPrefix(path, "tcp ")
		}
		return path == r.arg
	}
	return false
}

// decide returns whether op on path is allowed and the rule that decided
// ("" for the default). With specificFirst, a rule naming op exactly beats
// any wildcard rule wherever it stands (an observed Seatbelt behaviour);
// otherwise the last matching rule wins.
func (p *sbProfile) decide(op, path string, specificFirst bool) (bool, string) {
	pick := func(exact bool) (bool, string, bool) {
		for i := len(p.rules) - 1; i >= 0; i-- {
			r := &p.rules[i]
			hit := false
			for _, o := range r.ops {
				if exact && o == op || !exact && covers(o, op) {
					hit = true
				}
			}
			if hit && r.matchesPath(path) {
				return r.action == "allow", r.src, true
			}
		}
		return false, "", false
	}
	if specificFirst {
		if ok, src, found := pick(true); found {
			return ok, src
		}
	}
	if ok, src, found := pick(false); found {
		return ok, src
	}
	return false, ""
}

// allows decides op on path under both readings of Seatbelt's precedence
// and fails the test when they differ: the profile must not depend on
// which one is right.
func (p *sbProfile) allows(t *testing.T, op, path string) bool {
	t.Helper()
	a, ra := p.decide(op, path, false)
	b, rb := p.decide(op, path, true)
	if a != b {
		t.Fatalf("%s %s: last-match says %v (%s), specific-first says %v (%s)", op, path, a, ra, b, rb)
	}
	return a
}

// skeleton is the profile's structure without its strings: the actions,
// operations and filter kinds, in order.
func (p *sbProfile) skeleton() []string {
	out := make([]string, len(p.rules))
	for i, r := range p.rules {
		out[i] = r.action + " " + strings.Join(r.ops, " ") + " " + r.filter
	}
	return out
}

func mustRead(t *testing.T, src, tag string) *sbProfile {
	t.Helper()
	p, err := readProfile(src, tag)
	if err != nil {
		t.Fatalf("profile does not read back: %v\n%s", err, src)
	}
	return p
}

func TestReaderRejectsMalformed(t *testing.T) {
	tag := DefaultTag
	head := "(version 1)\n(deny default (with message \"cordon\"))\n"
	tests := []struct{ name, src string }{
		{"unbalanced open", head + "(allow file-read* (subpath \"/a\")"},
		{"unbalanced close", head + "(allow file-read* (subpath \"/a\")))"},
		{"unterminated string", head + "(allow file-read* (subpath \"/a))"},
		{"bad escape", head + "(allow file-read* (subpath \"/a\\n\"))"},
		{"unknown op", head + "(allow file* (subpath \"/a\"))"},
		{"allow default", head + "(allow default)"},
		{"unfiltered file allow", head + "(allow file-write*)"},
		{"unknown filter", head + "(allow file-read* (vnode-type DIRECTORY))"},
		{"relative path", head + "(allow file-read* (subpath \"a\"))"},
		{"untagged deny", head + "(deny file-write* (subpath \"/a\"))"},
		{"unanchored regex", head + "(deny file-write* (regex #\"/a\") (with message \"cordon\"))"},
		{"regex with backslash", head + "(deny file-write* (regex #\"^/a\\.b$\") (with message \"cordon\"))"},
		{"two filters", head + "(allow file-read* (subpath \"/a\") (subpath \"/b\"))"},
		{"no version", "(deny default (with message \"cordon\"))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := readProfile(tt.src, tag); err == nil {
				t.Fatalf("accepted:\n%s", tt.src)
			}
		})
	}
}

func TestEvaluatorLastMatchWins(t *testing.T) {
	src := "(version 1)\n(deny default (with message \"cordon\"))\n" +
		"(allow file-read* (subpath \"/a\"))\n" +
		"(deny file-read* (regex #\"^/a/[sS]ecret(/.*)?$\") (with message \"cordon\"))\n" +
		"(allow file-read* (literal \"/a/secret/ok\"))\n"
	p := mustRead(t, src, "cordon")
	tests := []struct {
		path string
		want bool
	}{
		{"/a", true}, {"/a/x", true}, {"/ab", false}, {"/a/secret", false},
		{"/a/Secret/x", false}, {"/a/secret/ok", true}, {"/b", false},
	}
	for _, tt := range tests {
		if got := p.allows(t, "file-read-data", tt.path); got != tt.want {
			t.Errorf("read %s = %v, want %v", tt.path, got, tt.want)
		}
	}
	if p.allows(t, "file-write-create", "/a/x") {
		t.Error("write allowed by a read rule")
	}
}
