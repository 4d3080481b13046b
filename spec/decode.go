package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// decoder walks yaml.v3 nodes, converting and checking each field as it
// goes. It never stops at the first problem: every problem becomes one
// FieldError in errs.
type decoder struct {
	errs []error
	// lines maps a field path to the YAML line it was read from, for the
	// checks that compare several fields after the walk.
	lines map[string]int
}

func newDecoder() *decoder { return &decoder{lines: map[string]int{}} }

func (d *decoder) fail(field string, line int, problem, fix string) {
	d.errs = append(d.errs, &FieldError{Field: field, Line: line, Problem: problem, Fix: fix})
}

// line returns the recorded line of field, or of its closest recorded
// parent field, or 0.
func (d *decoder) line(field string) int {
	for field != "" {
		if l, ok := d.lines[field]; ok {
			return l
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			break
		}
		field = field[:i]
	}
	return 0
}

// result returns nil or every problem, ordered by line, under a heading
// that names the file.
func (d *decoder) result(kind, source string) error {
	if len(d.errs) == 0 {
		return nil
	}
	sort.SliceStable(d.errs, func(i, j int) bool {
		li, lj := errLine(d.errs[i]), errLine(d.errs[j])
		if li == 0 || lj == 0 {
			return li != 0 && lj == 0
		}
		return li < lj
	})
	plural := "s"
	if len(d.errs) == 1 {
		plural = ""
	}
	return fmt.Errorf("invalid %s %s (%d problem%s):\n%w", kind, source, len(d.errs), plural, errors.Join(d.errs...))
}

func errLine(err error) int {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Line
	}
	return 0
}

func sub(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func index(parent string, i int) string { return fmt.Sprintf("%s[%d]", parent, i) }

var yamlLineRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// document parses data into its top node, or nil for an empty document. With
// single set, a second YAML document is an error; worker files may carry
// harness-specific documents after the first.
func (d *decoder) document(data []byte, single bool) (top *yaml.Node) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := safeDecode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		d.syntaxError(err)
		return nil
	}
	if single {
		var extra yaml.Node
		err := safeDecode(dec, &extra)
		switch {
		case errors.Is(err, io.EOF):
		case err != nil:
			d.syntaxError(err)
		default:
			d.fail("yaml", extra.Line, "the file holds more than one YAML document", "keep a single document (remove the extra '---' line)")
		}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

// safeDecode turns a panic inside the YAML parser into an error: a hostile
// file must produce a message, never a crash.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: the parser failed: %v", r)
		}
	}()
	return dec.Decode(n)
}

func (d *decoder) syntaxError(err error) {
	msg := err.Error()
	line := 0
	if m := yamlLineRe().FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	d.fail("yaml", line, msg, "correct the YAML syntax")
}

// isNull reports whether n is absent or an explicit null (`key:` or `~`).
func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// usable reports whether n can be read as a value; an alias is refused
// because expanding aliases lets a small file stand for a huge config.
func (d *decoder) usable(n *yaml.Node, field string) bool {
	if n.Kind == yaml.AliasNode {
		d.fail(field, n.Line, "YAML aliases (*name) are not supported", "write the value out in full")
		return false
	}
	return true
}

// describe names a node's kind for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!bool":
			return "a boolean"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!null":
			return "null"
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		default:
			return fmt.Sprintf("a %s value", n.ShortTag())
		}
	}
	return "an unsupported value"
}

// fields reads a mapping whose keys must be among allowed (any key is
// accepted when strict is false). It returns the value node of each key
// that is present and records each value's line.
func (d *decoder) fields(n *yaml.Node, field string, allowed []string, strict bool) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if isNull(n) || !d.usable(n, field) {
		return out
	}
	if n.Kind != yaml.MappingNode {
		name := field
		if name == "" {
			name = "the file"
		}
		d.fail(field, n.Line, fmt.Sprintf("must be a mapping, not %s", describe(n)), fmt.Sprintf("write %s as keys: %s", name, strings.Join(allowed, ", ")))
		return out
	}
	known := map[string]bool{}
	for _, k := range allowed {
		known[k] = true
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" {
			if strict {
				d.fail(field, k.Line, "has a key that is not a plain name", "use one of: "+strings.Join(allowed, ", "))
			}
			continue
		}
		path := sub(field, k.Value)
		if !known[k.Value] {
			if strict {
				d.fail(path, k.Line, fmt.Sprintf("unknown key %q", k.Value), "remove it or use one of: "+strings.Join(allowed, ", "))
			}
			continue
		}
		if _, dup := out[k.Value]; dup {
			d.fail(path, k.Line, fmt.Sprintf("key %q is given twice", k.Value), "keep one of them")
			continue
		}
		out[k.Value] = v
		d.lines[path] = v.Line
	}
	return out
}

// scalar checks that n is a scalar with one of the given tags.
func (d *decoder) scalar(n *yaml.Node, field, want, fix string, tags ...string) bool {
	if !d.usable(n, field) {
		return false
	}
	if n.Kind == yaml.ScalarNode {
		tag := n.ShortTag()
		for _, t := range tags {
			if tag == t {
				return true
			}
		}
	}
	d.fail(field, n.Line, fmt.Sprintf("must be %s, not %s", want, describe(n)), fix)
	return false
}

// str reads a string. Numbers are accepted as written ("2024"); booleans
// and null are not, since they are almost always a mistake.
func (d *decoder) str(n *yaml.Node, field string) (string, bool) {
	if !d.scalar(n, field, "a string", "quote the value", "!!str", "!!int", "!!float") {
		return "", false
	}
	if strings.IndexByte(n.Value, 0) >= 0 {
		d.fail(field, n.Line, "contains a NUL byte", "remove the NUL byte")
		return "", false
	}
	return n.Value, true
}

func (d *decoder) boolean(n *yaml.Node, field string) (bool, bool) {
	if !d.scalar(n, field, "true or false", "write true or false", "!!bool") {
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		d.fail(field, n.Line, "is not a boolean", "write true or false")
		return false, false
	}
	return b, true
}

func (d *decoder) integer(n *yaml.Node, field, fix string) (int64, bool) {
	if !d.scalar(n, field, "a whole number", fix, "!!int") {
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		d.fail(field, n.Line, fmt.Sprintf("%q is not a whole number that fits in 64 bits", n.Value), fix)
		return 0, false
	}
	return v, true
}

// positiveInt reads a whole number above zero.
func (d *decoder) positiveInt(n *yaml.Node, field, fix string) (int64, bool) {
	v, ok := d.integer(n, field, fix)
	if ok && v <= 0 {
		d.fail(field, n.Line, fmt.Sprintf("must be above zero, not %d", v), fix)
		return 0, false
	}
	return v, ok
}

// size reads a byte size above zero ("512MiB" or a whole number of bytes).
func (d *decoder) size(n *yaml.Node, field, zeroFix string) (int64, bool) {
	if !d.scalar(n, field, "a size", sizeHint, "!!str", "!!int", "!!float") {
		return 0, false
	}
	if strings.IndexByte(n.Value, 0) >= 0 {
		d.fail(field, n.Line, "contains a NUL byte", sizeHint)
		return 0, false
	}
	v, err := ParseBytes(n.Value)
	if err != nil {
		d.fail(field, n.Line, err.Error(), sizeHint)
		return 0, false
	}
	if v <= 0 {
		d.fail(field, n.Line, fmt.Sprintf("must be above zero, not %q", n.Value), zeroFix)
		return 0, false
	}
	return v, true
}

// strItem is one string of a list, with its field path and line.
type strItem struct {
	s     string
	field string
	line  int
}

// strList reads a list of strings; items that are not strings are reported
// and left out. present is false when the key is absent or null, so that
// callers can tell "omitted" from "[]".
func (d *decoder) strList(n *yaml.Node, field string) (items []strItem, present bool) {
	if isNull(n) || !d.usable(n, field) {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(field, n.Line, fmt.Sprintf("must be a list, not %s", describe(n)), "write a list: [a, b]")
		return nil, true
	}
	items = []strItem{}
	for i, item := range n.Content {
		f := index(field, i)
		d.lines[f] = item.Line
		if s, ok := d.str(item, f); ok {
			items = append(items, strItem{s: s, field: f, line: item.Line})
		}
	}
	return items, true
}

// seq reads a list of nodes.
func (d *decoder) seq(n *yaml.Node, field string) []*yaml.Node {
	if isNull(n) || !d.usable(n, field) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(field, n.Line, fmt.Sprintf("must be a list, not %s", describe(n)), "write a list of mappings")
		return nil
	}
	return n.Content
}

// network reads `false | true | {allow: [...]}`.
func (d *decoder) network(n *yaml.Node, field string) (Network, bool) {
	const fix = `write false, true, or {allow: ["host[:port]", "*.domain"]}`
	if isNull(n) || !d.usable(n, field) {
		return Network{}, false
	}
	if n.Kind == yaml.ScalarNode {
		if n.ShortTag() != "!!bool" {
			d.fail(field, n.Line, fmt.Sprintf("must be true, false or an allow mapping, not %s", describe(n)), fix)
			return Network{}, false
		}
		b, ok := d.boolean(n, field)
		return Network{Enabled: b}, ok
	}
	if n.Kind != yaml.MappingNode {
		d.fail(field, n.Line, fmt.Sprintf("must be true, false or an allow mapping, not %s", describe(n)), fix)
		return Network{}, false
	}
	f := d.fields(n, field, []string{"allow"}, true)
	af := sub(field, "allow")
	raw, present := d.strList(f["allow"], af)
	if !present || len(raw) == 0 {
		d.fail(af, d.line(af), "an allow mapping needs at least one host", "list hosts as allow: [\"github.com:443\"], or write network: false for none or network: true for all")
		return Network{}, false
	}
	net := Network{Enabled: true}
	seen := map[string]bool{}
	ok := true
	for _, e := range raw {
		norm, problem := normalizeAllow(e.s)
		if problem != "" {
			d.fail(e.field, e.line, problem, `write host[:port]: "github.com", "github.com:443", "*.pypi.org", "10.0.0.1:8080", "[::1]:8080", or tcp://host:port for a port that carries another protocol than TLS, HTTP/1.x or SSH: "tcp://db.example.com:5432"`)
			ok = false
			continue
		}
		if !seen[norm] {
			seen[norm] = true
			net.Allow = append(net.Allow, norm)
		}
	}
	return net, ok
}

// limits reads the limits mapping; every limit that is given must be above
// zero, since zero means "no limit". ParseLimit decides each value, as it
// does for the command line's flags.
func (d *decoder) limits(n *yaml.Node, field string) Limits {
	var l Limits
	names := []string{"timeout", "memory", "pids", "file_size", "cpus", "output"}
	f := d.fields(n, field, names, true)
	kinds := map[string][]string{"pids": {"!!int"}, "cpus": {"!!int", "!!float"}}
	for _, name := range names {
		v := f[name]
		if isNull(v) {
			continue
		}
		lf := sub(field, name)
		want, ok := kinds[name]
		if !ok {
			want = []string{"!!str", "!!int", "!!float"}
		}
		if !d.scalar(v, lf, "a "+limitKind(name), limitFixes[name], want...) {
			continue
		}
		one, err := ParseLimit(name, v.Value)
		var le *LimitError
		if errors.As(err, &le) {
			d.fail(lf, v.Line, le.Problem, le.Fix+", or remove the key for no limit")
			continue
		}
		l = mergeLimits(l, one)
	}
	return l
}

func limitKind(name string) string {
	switch name {
	case "timeout":
		return "duration"
	case "pids":
		return "whole number"
	case "cpus":
		return "number"
	}
	return "size"
}

// mergeLimits sets in l the limits that one sets.
func mergeLimits(l, one Limits) Limits {
	if one.Timeout > 0 {
		l.Timeout = one.Timeout
	}
	if one.Memory > 0 {
		l.Memory = one.Memory
	}
	if one.Pids > 0 {
		l.Pids = one.Pids
	}
	if one.FileSize > 0 {
		l.FileSize = one.FileSize
	}
	if one.CPUs > 0 {
		l.CPUs = one.CPUs
	}
	if one.Output > 0 {
		l.Output = one.Output
	}
	return l
}
