package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCLIDoc: docs/cli.md lists every command `cordon --help` lists, and
// for each exactly the flags its own `--help` prints (its flag list, and
// the flags of its usage lines where a command prints only those), so the
// page can neither miss a flag nor keep one that is gone.
func TestCLIDoc(t *testing.T) {
	data, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, part := range strings.Split(string(data), "\n## cordon ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		sections[strings.TrimSpace(name)] = body
	}
	top := runCLI(t, t.TempDir(), "--help")
	_, list, ok := strings.Cut(top.stdout+top.stderr, "commands:\n")
	if !ok {
		t.Fatalf("cordon --help lists no commands: %q", top.stdout+top.stderr)
	}
	var cmds []string
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); strings.HasPrefix(line, "  ") && len(f) > 1 {
			cmds = append(cmds, f[0])
		} else if line == "" {
			break
		}
	}
	if len(cmds) < 10 {
		t.Fatalf("cordon --help lists %d commands: %v", len(cmds), cmds)
	}
	docFlag := regexp.MustCompile("(?m)^\\| `(--?[a-z][a-z0-9-]*)")
	for _, c := range cmds {
		t.Run(c, func(t *testing.T) {
			body, ok := sections[c]
			if !ok {
				t.Fatalf("docs/cli.md has no section \"## cordon %s\"", c)
			}
			h := runCLI(t, t.TempDir(), c, "--help")
			want := helpFlags(h.stdout+h.stderr, "cordon "+c)
			var got []string
			for _, m := range docFlag.FindAllStringSubmatch(body, -1) {
				got = append(got, strings.TrimLeft(m[1], "-"))
			}
			slices.Sort(got)
			got = slices.Compact(got)
			for _, f := range want {
				if !slices.Contains(got, f) {
					t.Errorf("cordon %s --help has -%s; docs/cli.md does not list it", c, f)
				}
			}
			for _, f := range got {
				if !slices.Contains(want, f) {
					t.Errorf("docs/cli.md lists -%s for cordon %s; its --help has no such flag", f, c)
				}
			}
		})
	}
}

// helpFlags are the flags a command's --help names: the lines of its flag
// list ("  -name ARG") and the "[--name" of its usage lines that start
// with usage (not another command's usage that it shows too).
func helpFlags(help, usage string) []string {
	var flags []string
	listed := regexp.MustCompile(`^  --?([a-z][a-z0-9-]*)`)
	inUsage := regexp.MustCompile(`\[--?([a-z][a-z0-9-]*)`)
	for _, line := range strings.Split(help, "\n") {
		if m := listed.FindStringSubmatch(line); m != nil {
			flags = append(flags, m[1])
		}
		if l := strings.TrimPrefix(strings.TrimSpace(line), "usage: "); strings.HasPrefix(l, usage+" ") {
			for _, m := range inUsage.FindAllStringSubmatch(l, -1) {
				flags = append(flags, m[1])
			}
		}
	}
	slices.Sort(flags)
	return slices.Compact(flags)
}
