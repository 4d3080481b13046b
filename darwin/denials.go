package darwin

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Denial is one operation that was refused, as read from the sandbox log or
// from a tool's "Operation not permitted" message (Seatbelt refuses with
// EPERM).
type Denial struct {
	// PID is the refused process, or 0 when the source does not say.
	PID int
	// Process is the process or tool name, or "" when the source does not
	// say.
	Process string
	// Operation is the Seatbelt operation (file-write-create,
	// network-outbound, mach-lookup), or "" for a stderr message.
	Operation string
	// Path is the file or Unix socket path, or "" when the operation has
	// none (a Mach service, an IP address). Stderr messages may give a
	// relative path.
	Path string
	// Tag is the profile tag the log line carries, or "".
	Tag string
}

// NewTag returns a fresh tag for one run's profile: "cordon-" and 16 hex
// digits.
func NewTag() string {
	var b [8]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		// crypto/rand does not fail on supported systems; a fixed tag only
		// weakens the tie between log lines and this run.
		return DefaultTag
	}
	return DefaultTag + "-" + hex.EncodeToString(b[:])
}

// sameLineTag is a tag cordon generates (NewTag or DefaultTag), recognized
// when it trails a denial on the same line.
var sameLineTag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^` + DefaultTag + `(-[0-9a-f]{16})?$`) })

// kernelDenial matches the sandbox's kernel log message after "Sandbox: ",
// or a bare "proc(pid) deny(n) op target" line: the process name, its pid,
// the operation and the rest.
var (
	kernelDenial = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(.+?)\((\d+)\) deny\(\d+\) ([a-z][a-z0-9*-]*)(?: (.*))?$`)
	})
	bareDenial = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([^\s()]+)\((\d+)\) deny\(\d+\) ([a-z][a-z0-9*-]*)(?: (.*))?$`)
	})
	tagLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })
)

// Stderr wordings of EPERM.
var (
	eperm      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)operation not permitted`) })
	pythonPerm = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\[Errno 1\] Operation not permitted: (?:'([^']*)'|"([^"]*)")`)
	})
	nodePerm = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)EPERM: operation not permitted, \w+ '([^']*)'(?: -> '([^']*)')?`)
	})
	zshPerm = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([\w.+-]+):(?:\d+:)? operation not permitted: (.+)$`)
	})
	quotedName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("'([^']+)'|\"([^\"]+)\"|‘([^’]+)’|`([^']+)'") })
	goVerb     = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(open|openat|stat|lstat|mkdir|mkdirat|remove|unlinkat|chmod|chown|lchown|truncate|readlink|chdir|utimes|utimensat|symlink|link|rename) (.+)$`)
	})
	toolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[\w.+-]+$`) })
)

// severityWords start messages ("error: ...", git's "fatal: ...") but name
// no tool.
var severityWords = map[string]bool{"error": true, "fatal": true, "warning": true}

// ParseDenials reads denials from text: the kernel's sandbox messages as
// `log stream`/`log show` print them in their default and compact styles
// ("... Sandbox: bash(1234) deny(1) file-write-create /Users/u/x"), the
// same messages inside JSON or NDJSON output (the eventMessage field), bare
// "proc(pid) deny(n) op path" lines, and the "Operation not permitted"
// messages of shells, coreutils, Python, Node, Go and git on stderr. A
// run's tag is picked up from the line after a denial (where macOS puts the
// rule's message) or, for tags that NewTag makes, from the end of the line.
// Lines it does not recognize are skipped.
func ParseDenials(logOrStderr string) []Denial {
	var out []Denial
	if msgs, ok := jsonMessages(logOrStderr); ok {
		for _, m := range msgs {
			out = appendDenials(out, parseLines(m)...)
		}
		return out
	}
	var lines []string
	for _, line := range strings.Split(logOrStderr, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "{") {
			if msg, ok := eventMessage([]byte(trimmed)); ok {
				out = appendDenials(out, parseLines(strings.Join(lines, "\n"))...)
				lines = nil
				out = appendDenials(out, parseLines(msg)...)
				continue
			}
		}
		lines = append(lines, line)
	}
	return appendDenials(out, parseLines(strings.Join(lines, "\n"))...)
}

// appendDenials appends ds, skipping a denial equal to the one before it.
func appendDenials(out []Denial, ds ...Denial) []Denial {
	for _, d := range ds {
		if n := len(out); n > 0 && out[n-1] == d {
			continue
		}
		out = append(out, d)
	}
	return out
}

// jsonMessages decodes text that is wholly JSON (`log show --style json`,
// an array, or NDJSON objects) and returns the eventMessage of each entry.
func jsonMessages(text string) ([]string, bool) {
	trimmed := strings.TrimSpace(text)
	if !strings.HasPrefix(trimmed, "[") && !strings.HasPrefix(trimmed, "{") {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	var msgs []string
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if err == io.EOF {
			return msgs, true
		}
		if err != nil {
			return nil, false
		}
		v = bytes.TrimSpace(v)
		if len(v) > 0 && v[0] == '[' {
			var arr []json.RawMessage
			if json.Unmarshal(v, &arr) != nil {
				return nil, false
			}
			for _, e := range arr {
				if m, ok := eventMessage(e); ok {
					msgs = append(msgs, m)
				}
			}
			continue
		}
		if m, ok := eventMessage(v); ok {
			msgs = append(msgs, m)
		}
	}
}

// eventMessage returns the eventMessage field of one unified-log entry.
func eventMessage(obj []byte) (string, bool) {
	var e struct {
		EventMessage *string `json:"eventMessage"`
	}
	if json.Unmarshal(obj, &e) != nil || e.EventMessage == nil {
		return "", false
	}
	return *e.EventMessage, true
}

// parseLines parses plain text line by line.
func parseLines(text string) []Denial {
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	var out []Denial
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\r")
		if d, ok := parseKernelLine(line); ok {
			if d.Tag == "" && i+1 < len(lines) {
				next := strings.TrimSpace(lines[i+1])
				if tagLine().MatchString(next) {
					d.Tag = next
					i++
				}
			}
			out = append(out, d)
			continue
		}
		out = append(out, parseStderrLine(line)...)
	}
	return out
}

// parseKernelLine parses one sandbox log message.
func parseKernelLine(line string) (Denial, bool) {
	var m []string
	if i := strings.Index(line, "Sandbox: "); i >= 0 {
		m = kernelDenial().FindStringSubmatch(strings.TrimSpace(line[i+len("Sandbox: "):]))
	} else {
		m = bareDenial().FindStringSubmatch(strings.TrimSpace(line))
	}
	if m == nil {
		return Denial{}, false
	}
	pid, _ := strconv.Atoi(m[2])
	d := Denial{PID: pid, Process: m[1], Operation: m[3]}
	target := strings.TrimSpace(m[4])
	if i := strings.LastIndexByte(target, ' '); i >= 0 && sameLineTag().MatchString(target[i+1:]) {
		d.Tag = target[i+1:]
		target = strings.TrimSpace(target[:i])
	} else if sameLineTag().MatchString(target) {
		d.Tag, target = target, ""
	}
	if strings.HasPrefix(target, "/") {
		d.Path = target
	}
	return d, true
}

// parseStderrLine parses one stderr line for an EPERM message and returns
// the paths it names (a rename names two).
func parseStderrLine(line string) []Denial {
	loc := eperm().FindStringIndex(line)
	if loc == nil {
		return nil
	}
	trimmed := strings.TrimSpace(line)
	if strings.HasPrefix(trimmed, "sandbox-exec:") {
		return nil // sandbox-exec's own set-up failure, not a denial
	}
	if m := pythonPerm().FindStringSubmatch(line); m != nil {
		return denials("", m[1]+m[2])
	}
	if m := nodePerm().FindStringSubmatch(line); m != nil {
		return denials("", m[1], m[2])
	}
	if m := zshPerm().FindStringSubmatch(trimmed); m != nil {
		return denials(m[1], m[2])
	}
	before := strings.TrimSpace(line[:loc[0]])
	before = strings.TrimSpace(strings.TrimSuffix(before, ":"))
	if before == "" {
		return nil
	}
	fields := strings.Split(before, ": ")
	process := ""
	if len(fields) > 1 && toolName().MatchString(fields[0]) && !severityWords[strings.ToLower(fields[0])] {
		process = fields[0]
	}
	last := fields[len(fields)-1]
	if qs := quotedName().FindAllStringSubmatch(last, -1); qs != nil {
		q := qs[len(qs)-1]
		return denials(process, q[1]+q[2]+q[3]+q[4])
	}
	if m := goVerb().FindStringSubmatch(last); m != nil {
		if m[1] == "rename" || m[1] == "link" || m[1] == "symlink" {
			if i := strings.Index(m[2], " /"); i > 0 {
				return denials(process, m[2][:i], m[2][i+1:])
			}
		}
		return denials(process, m[2])
	}
	if strings.HasPrefix(last, "/") || strings.HasPrefix(last, "./") || strings.HasPrefix(last, "../") {
		return denials(process, last)
	}
	if i := strings.Index(last, " /"); i >= 0 {
		return denials(process, last[i+1:])
	}
	if len(fields) > 1 && !strings.Contains(last, " ") {
		return denials(process, last) // a relative name: "touch: x: Operation not permitted"
	}
	return nil
}

func denials(process string, paths ...string) []Denial {
	var out []Denial
	for _, p := range paths {
		if p != "" {
			out = append(out, Denial{Process: process, Path: p})
		}
	}
	return out
}
