package decide

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A config is decided on what git reads from it, so it is read here as
// git's own parser reads it (config.c: git_parse_source, get_base_var,
// get_extended_base_var, get_value, parse_value), not line by line with
// Go's idea of white space: git trims only space, tab, CR and LF (a
// value's trailing vertical tab or no-break space is part of it), reads a
// tab between words as a space (refused here: git writes \t), strips
// the quotes anywhere in a value (`."."` is `..`), ends a value at an
// unquoted `#` or `;`, takes `\"`, `\\`, `\t`, `\n` and `\b` as escapes,
// and takes a key on the same line as its section header. A form git
// refuses, or one that a reader of cordon's or some git could read
// otherwise (a NUL, a byte order mark, the old [section.subsection] form,
// a value continued on the next line), is refused.

// errConfigForm is a config git would not read, or not as this package does.
var errConfigForm = errors.New("a form of git config cordon does not decide")

// configReader walks a config as git's get_next_char does: CR LF is LF,
// and the end reads as LF with eof set.
type configReader struct {
	data []byte
	pos  int
	line int
	eof  bool
}

func (r *configReader) next() byte {
	if r.pos >= len(r.data) {
		r.eof = true
		return '\n'
	}
	c := r.data[r.pos]
	r.pos++
	if c == '\r' && r.pos < len(r.data) && r.data[r.pos] == '\n' {
		r.pos++
		c = '\n'
	}
	if c == '\n' {
		r.line++
	}
	return c
}

// gitSpace is git's isspace: space, tab, LF and CR only.
func gitSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func gitAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func gitKeyChar(c byte) bool { return gitAlpha(c) || c >= '0' && c <= '9' || c == '-' }

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// parseConfig reads data as git reads a config: every key in order, with
// its value as git passes it on.
func parseConfig(data []byte) ([]configEntry, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, fmt.Errorf("a NUL byte at offset %d: %w", i, errConfigForm)
	}
	if len(data) > 0 && data[0] == 0xef {
		return nil, fmt.Errorf("a byte order mark: %w", errConfigForm)
	}
	r := &configReader{data: data, line: 1}
	var out []configEntry
	section, sub, hasSub, comment := "", "", false, false
	for {
		at := r.line
		c := r.next()
		switch {
		case c == '\n':
			if r.eof {
				return out, nil
			}
			comment = false
		case comment || gitSpace(c):
		case c == '#' || c == ';':
			comment = true
		case c == '[':
			var err error
			if section, sub, hasSub, err = r.header(); err != nil {
				return nil, fmt.Errorf("line %d: %w", at, err)
			}
		case gitAlpha(c):
			e, err := r.entry(c, section, sub, hasSub)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", at, err)
			}
			e.line = at
			out = append(out, e)
		default:
			return nil, fmt.Errorf("line %d: %q where git wants a key, a section or a comment: %w", at, c, errConfigForm)
		}
	}
}

// header reads a section header after its "[": a name of key characters,
// then either "]" or white space, a quoted subsection and "]".
func (r *configReader) header() (section, sub string, hasSub bool, err error) {
	var name []byte
	for {
		c := r.next()
		switch {
		case r.eof:
			return "", "", false, fmt.Errorf("a section header with no ]: %w", errConfigForm)
		case c == ']':
			if len(name) == 0 {
				return "", "", false, fmt.Errorf("an empty section name: %w", errConfigForm)
			}
			return string(name), "", false, nil
		case gitSpace(c):
			if len(name) == 0 {
				return "", "", false, fmt.Errorf("an empty section name: %w", errConfigForm)
			}
			sub, err := r.subsection(c)
			return string(name), sub, true, err
		case c == '.':
			return "", "", false, fmt.Errorf("the old [section.subsection] form: %w", errConfigForm)
		case !gitKeyChar(c):
			return "", "", false, fmt.Errorf("%q in a section name: %w", c, errConfigForm)
		}
		name = append(name, lower(c))
	}
}

// subsection reads `"name"]` after the white space c, as
// get_extended_base_var does.
func (r *configReader) subsection(c byte) (string, error) {
	for gitSpace(c) {
		if c == '\n' {
			return "", fmt.Errorf("a section header broken over lines: %w", errConfigForm)
		}
		c = r.next()
	}
	if c != '"' {
		return "", fmt.Errorf("a subsection that is not quoted: %w", errConfigForm)
	}
	var sub []byte
	for {
		c = r.next()
		if c == '\\' {
			c = r.next()
		} else if c == '"' {
			break
		}
		if c == '\n' {
			return "", fmt.Errorf("a subsection broken over lines: %w", errConfigForm)
		}
		sub = append(sub, c)
	}
	if r.next() != ']' {
		return "", fmt.Errorf("more after a subsection's closing quote: %w", errConfigForm)
	}
	return string(sub), nil
}

// entry reads a key whose first letter is c, and its value, as get_value
// and parse_value do.
func (r *configReader) entry(c byte, section, sub string, hasSub bool) (configEntry, error) {
	if section == "" {
		return configEntry{}, fmt.Errorf("a key before any section: %w", errConfigForm)
	}
	name := []byte{lower(c)}
	for {
		c = r.next()
		if r.eof || !gitKeyChar(c) {
			break
		}
		name = append(name, lower(c))
	}
	for c == ' ' || c == '\t' {
		c = r.next()
	}
	e := configEntry{pattern: section + "." + string(name), key: section + "." + string(name)}
	if hasSub {
		e.pattern = section + ".*." + string(name)
		e.key = section + "." + strconv.Quote(sub) + "." + string(name)
	}
	switch c {
	case '\n':
		e.bare = true
		return e, nil
	case '=':
		v, err := r.value()
		e.val = v
		return e, err
	}
	return e, fmt.Errorf("%q after the key %s: %w", c, e.pattern, errConfigForm)
}

// value reads a value after its "=" as parse_value does.
func (r *configReader) value() (string, error) {
	var v strings.Builder
	quote, comment, trim, odd := false, false, -1, false
	for {
		c := r.next()
		switch {
		case c == '\n':
			if quote {
				return "", fmt.Errorf("a quote left open at the line's end: %w", errConfigForm)
			}
			s := v.String()
			if trim >= 0 {
				s = s[:trim]
			}
			return s, nil
		case comment:
			continue
		case gitSpace(c) && !quote:
			if trim < 0 {
				trim = v.Len()
			}
			if v.Len() > 0 {
				v.WriteByte(' ')
				odd = odd || c != ' '
			}
			continue
		case !quote && (c == ';' || c == '#'):
			comment = true
			continue
		}
		if trim >= 0 && odd {
			// git 2.39 reads it as a space; whether every git does is
			// not for cordon to bet on, and git writes a tab as \t.
			return "", fmt.Errorf("a tab or CR between the words of a value: %w", errConfigForm)
		}
		trim, odd = -1, false
		switch c {
		case '\\':
			switch e := r.next(); e {
			case '\n':
				// git joins the next line; spec's reading of the host's
				// configs (gitEntries) is line by line, so both readers
				// could not agree.
				return "", fmt.Errorf("a value continued on the next line: %w", errConfigForm)
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
				c = e
			default:
				return "", fmt.Errorf("an unknown escape \\%c in a value: %w", e, errConfigForm)
			}
		case '"':
			quote = !quote
			continue
		}
		v.WriteByte(c)
	}
}
