package spec

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// MountTarget checks and cleans a mount target as the config's `target:`
// does: an absolute sandbox path ("~" is the host's $HOME), without "..",
// that does not replace / or /proc, /dev or /sys, which cordon sets up
// itself. Every front end that takes a target calls it, so a target gets
// the same answer wherever it is given.
func MountTarget(s string) (string, error) {
	t, prob := targetPath(s)
	if prob != "" {
		return "", fmt.Errorf("target %s: %s", s, prob)
	}
	return t, nil
}

// ParseMount parses the command line's mount form SRC[:DST][:ro|rw]. SRC
// must exist ("~" is $HOME; a relative SRC is taken from cwd); DST
// defaults to SRC and is checked by MountTarget.
func ParseMount(v, cwd string) (Mount, error) {
	var m Mount
	if strings.ContainsRune(v, 0) {
		return m, errors.New("contains a NUL byte")
	}
	parts := strings.Split(v, ":")
	if n := len(parts); n > 1 && (parts[n-1] == "ro" || parts[n-1] == "rw") {
		m.Readonly = parts[n-1] == "ro"
		parts = parts[:n-1]
	}
	if len(parts) > 2 || parts[0] == "" {
		return m, errors.New("want SRC[:DST][:ro]")
	}
	src, prob := hostPath(parts[0], cwd)
	if prob != "" {
		return m, fmt.Errorf("source %s: %s", parts[0], prob)
	}
	if _, err := os.Stat(src); err != nil {
		return m, fmt.Errorf("source %s does not exist; a mount source is never created", src)
	}
	m.Source, m.Target = src, src
	if len(parts) == 2 {
		t, err := MountTarget(parts[1])
		if err != nil {
			return m, err
		}
		m.Target = t
	} else if prob := placementProblem(src); prob != "" {
		return m, fmt.Errorf("target defaults to the source, which %s; give a target elsewhere", prob)
	}
	return m, nil
}
