package spec

import (
	"errors"
	"fmt"
	"os"
	"slices"
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

// ParseMount parses the command line's mount form SRC[:DST][:ro|rw], or
// docker's --mount form type=bind,source=SRC,target=DST[,readonly]. SRC
// must exist ("~" is $HOME; a relative SRC is taken from cwd); DST
// defaults to SRC and is checked by MountTarget.
func ParseMount(v, cwd string) (Mount, error) {
	var m Mount
	if strings.ContainsRune(v, 0) {
		return m, errors.New("contains a NUL byte")
	}
	if longMount(v) {
		return parseLongMount(v, cwd)
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

// longKeys are the keys of docker's --mount form that cordon takes.
var longKeys = []string{"type", "source", "src", "target", "destination", "dst", "readonly", "ro"}

// longMount reports whether v is written in docker's --mount form: it
// starts with one of its keys followed by "=" (or is "readonly" and a
// comma). A plain path that holds "=" further on stays a path.
func longMount(v string) bool {
	first, _, _ := strings.Cut(v, ",")
	k, _, hasEq := strings.Cut(first, "=")
	return (hasEq || strings.Contains(v, ",")) && slices.Contains(longKeys, strings.ToLower(k))
}

// parseLongMount parses docker's --mount form: type=bind (the only type),
// source|src, target|destination|dst, and readonly|ro (alone or =true,
// =1, =false, =0). Every other key is refused by name.
func parseLongMount(v, cwd string) (Mount, error) {
	var src, dst string
	ro := false
	for _, kv := range strings.Split(v, ",") {
		k, val, hasEq := strings.Cut(kv, "=")
		switch strings.ToLower(k) {
		case "type":
			if val != "bind" {
				return Mount{}, fmt.Errorf("type=%s: only type=bind is supported (a host directory or file bound in)", val)
			}
		case "source", "src":
			src = val
		case "target", "destination", "dst":
			dst = val
		case "readonly", "ro":
			switch {
			case !hasEq, val == "true", val == "1":
				ro = true
			case val == "false", val == "0":
				ro = false
			default:
				return Mount{}, fmt.Errorf("%s=%s: want true or false", k, val)
			}
		default:
			return Mount{}, fmt.Errorf("%q is not a key cordon takes; want type=bind,source=SRC,target=DST[,readonly]", k)
		}
	}
	if src == "" || dst == "" {
		return Mount{}, errors.New("want type=bind,source=SRC,target=DST[,readonly]: source and target are required")
	}
	short := src + ":" + dst
	if ro {
		short += ":ro"
	}
	if strings.Contains(src, ":") || strings.Contains(dst, ":") {
		return Mount{}, errors.New("a source or target with ':' is not supported")
	}
	return ParseMount(short, cwd)
}
