package linux

import (
	"bufio"
	"strconv"
	"strings"
)

// The pure halves of the host probes: parsing what the kernel reports. They
// build and are tested on every OS; host_linux.go reads the real files.

// kernelAtLeast parses a kernel release, "MAJOR.MINOR[.…]", and compares it
// with major.minor. A release it cannot read is too old.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(leadingDigits(parts[0]))
	mi, err2 := strconv.Atoi(leadingDigits(parts[1]))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// submountsIn reports whether the mountinfo that sc reads lists a mount
// point strictly below dir.
func submountsIn(sc *bufio.Scanner, dir string) (bool, error) {
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if mp != dir && strings.HasPrefix(mp, strings.TrimSuffix(dir, "/")+"/") {
			return true, nil
		}
	}
	return false, sc.Err()
}

// unescapeMountinfo decodes the \ooo octal escapes mountinfo uses for
// space, tab, newline and backslash.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
