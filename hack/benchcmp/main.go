// Command benchcmp times sandbox runners side by side for hack/bench.
//
// It reads cases from a file, one per line, fields separated by tabs:
//
//	RUNNER  COMMAND  EXPECT  DIR  ARGV...
//
// EXPECT is the exact stdout a run must print ("-" for none, "\n" written
// as a literal backslash-n). Every run must exit 0 and print EXPECT, or
// benchcmp stops: a failing runner would otherwise look fast.
//
// Runs are interleaved (one run of every case per round) so that drift in
// the machine's load spreads evenly over the runners, and each round starts
// one case later than the one before, so that no case always follows the
// same one: a case's place in the round moved it by 70 to 190 µs on a
// 2-vCPU VM (a warm exec right after a cold run paid for the cold run's
// teardown), as much as the effects measured. For each case it
// reports the median, p90 and minimum wall time from fork to reaped exit,
// the median CPU time (user+system of the runner and its reaped
// descendants), the peak RSS (wait4's ru_maxrss: the largest of the runner
// and its reaped descendants), and sequential runs per second. It prints a
// markdown table with the ratios of the reference runner to every other one
// and can write the raw samples as JSON.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

type benchCase struct {
	Runner  string   `json:"runner"`
	Command string   `json:"command"`
	Expect  string   `json:"-"`
	Dir     string   `json:"dir"`
	Argv    []string `json:"argv"`

	WallNS   []int64 `json:"wall_ns"`
	CPUNS    []int64 `json:"cpu_ns"`
	MaxRSSKB []int64 `json:"maxrss_kb"`
}

func main() {
	n := flag.Int("n", 50, "measured runs of each case")
	warmup := flag.Int("warmup", 5, "warm-up runs of each case, not measured")
	casesFile := flag.String("cases", "", "`FILE` with one case per line (RUNNER TAB COMMAND TAB EXPECT TAB DIR TAB ARGV...)")
	ref := flag.String("ref", "cordon", "`RUNNER` whose ratios to the others are reported")
	jsonOut := flag.String("json", "", "write the raw samples to `FILE`")
	var ratios ratioFlag
	flag.Var(&ratios, "ratio", "also report the ratio `A/B` of runners A and B on every command both ran (repeatable)")
	flag.Parse()
	if *casesFile == "" || *n < 1 || *warmup < 0 {
		fmt.Fprintln(os.Stderr, "usage: benchcmp -cases FILE [-n 50] [-warmup 5] [-ref cordon] [-json FILE]")
		os.Exit(2)
	}
	cases, err := readCases(*casesFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchcmp: %v\n", err)
		os.Exit(2)
	}
	for round := 0; round < *warmup+*n; round++ {
		for k := range cases {
			c := cases[(k+round)%len(cases)]
			wall, cpu, rss, err := runOnce(c)
			if err != nil {
				fmt.Fprintf(os.Stderr, "benchcmp: %s %q: %v\n", c.Runner, c.Command, err)
				os.Exit(1)
			}
			if round >= *warmup {
				c.WallNS = append(c.WallNS, wall)
				c.CPUNS = append(c.CPUNS, cpu)
				c.MaxRSSKB = append(c.MaxRSSKB, rss)
			}
		}
	}
	fmt.Print(table(cases, *ref))
	fmt.Print(extraRatios(cases, ratios))
	if *jsonOut != "" {
		data, err := json.MarshalIndent(cases, "", " ")
		if err == nil {
			err = os.WriteFile(*jsonOut, append(data, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchcmp: write %s: %v\n", *jsonOut, err)
			os.Exit(1)
		}
	}
}

func readCases(path string) ([]*benchCase, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*benchCase
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" || strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) < 5 {
			return nil, fmt.Errorf("%s:%d: want RUNNER, COMMAND, EXPECT, DIR and ARGV separated by tabs", path, line)
		}
		c := &benchCase{Runner: fields[0], Command: fields[1], Dir: fields[3], Argv: fields[4:]}
		if fields[2] != "-" {
			c.Expect = strings.ReplaceAll(fields[2], `\n`, "\n")
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no cases")
	}
	return out, nil
}

// runOnce runs c once and returns its wall time, CPU time and peak RSS.
func runOnce(c *benchCase) (wall, cpu, maxRSS int64, err error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir = c.Dir
	cmd.Stdin = nil
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	start := time.Now()
	err = cmd.Run()
	wall = time.Since(start).Nanoseconds()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w; stderr: %s", err, tail(stderr.String()))
	}
	if c.Expect != "" && stdout.String() != c.Expect {
		return 0, 0, 0, fmt.Errorf("stdout %q, want %q; stderr: %s", stdout.String(), c.Expect, tail(stderr.String()))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Nanoseconds()
		maxRSS = int64(ru.Maxrss) // kilobytes on Linux
	}
	return wall, cpu, maxRSS, nil
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 400 {
		s = "…" + s[len(s)-400:]
	}
	return s
}

// percentile returns the nearest-rank percentile p (0-100) of xs.
func percentile(xs []int64, p float64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}

func ms(ns int64) string { return fmt.Sprintf("%.1f", float64(ns)/1e6) }

func sum(xs []int64) int64 {
	var t int64
	for _, x := range xs {
		t += x
	}
	return t
}

func table(cases []*benchCase, ref string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("| runner | command | median ms | p90 ms | min ms | CPU ms (median) | peak RSS MiB (median / max) | runs/s |\n")
	w("|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cases {
		runsPerSec := float64(len(c.WallNS)) / (float64(sum(c.WallNS)) / 1e9)
		w("| %s | `%s` | %s | %s | %s | %s | %.1f / %.1f | %.0f |\n", c.Runner, c.Command,
			ms(percentile(c.WallNS, 50)), ms(percentile(c.WallNS, 90)), ms(slices.Min(c.WallNS)),
			ms(percentile(c.CPUNS, 50)),
			float64(percentile(c.MaxRSSKB, 50))/1024, float64(slices.Max(c.MaxRSSKB))/1024, runsPerSec)
	}
	var commands []string
	for _, c := range cases {
		if !slices.Contains(commands, c.Command) {
			commands = append(commands, c.Command)
		}
	}
	var rows strings.Builder
	for _, cmd := range commands {
		var r *benchCase
		for _, c := range cases {
			if c.Runner == ref && c.Command == cmd {
				r = c
			}
		}
		if r == nil {
			continue
		}
		for _, c := range cases {
			if c == r || c.Command != cmd || strings.HasPrefix(c.Runner, ref+" ") {
				continue
			}
			ratio := func(a, b int64) string { return fmt.Sprintf("%.2f", float64(a)/float64(b)) }
			fmt.Fprintf(&rows, "| %s/%s | `%s` | %s | %s | %s |\n", ref, c.Runner, cmd,
				ratio(percentile(r.WallNS, 50), percentile(c.WallNS, 50)),
				ratio(percentile(r.WallNS, 90), percentile(c.WallNS, 90)),
				ratio(percentile(r.MaxRSSKB, 50), percentile(c.MaxRSSKB, 50)))
		}
	}
	if rows.Len() > 0 {
		w("\n| ratio | command | median | p90 | peak RSS |\n|---|---|---:|---:|---:|\n")
		b.WriteString(rows.String())
	}
	return b.String()
}

// ratioFlag collects -ratio A/B pairs.
type ratioFlag [][2]string

func (r *ratioFlag) String() string { return fmt.Sprint(*r) }

func (r *ratioFlag) Set(v string) error {
	a, b, ok := strings.Cut(v, "/")
	if !ok || a == "" || b == "" {
		return fmt.Errorf("want RUNNER/RUNNER, not %q", v)
	}
	*r = append(*r, [2]string{a, b})
	return nil
}

// extraRatios reports the -ratio pairs: median, p90 and peak RSS of A over B.
func extraRatios(cases []*benchCase, pairs ratioFlag) string {
	var b strings.Builder
	for _, p := range pairs {
		for _, a := range cases {
			if a.Runner != p[0] {
				continue
			}
			for _, c := range cases {
				if c.Runner != p[1] || c.Command != a.Command {
					continue
				}
				if b.Len() == 0 {
					b.WriteString("\n| ratio | command | median | p90 | peak RSS |\n|---|---|---:|---:|---:|\n")
				}
				r := func(x, y int64) string { return fmt.Sprintf("%.2f", float64(x)/float64(y)) }
				fmt.Fprintf(&b, "| %s/%s | `%s` | %s | %s | %s |\n", p[0], p[1], a.Command,
					r(percentile(a.WallNS, 50), percentile(c.WallNS, 50)), r(percentile(a.WallNS, 90), percentile(c.WallNS, 90)),
					r(percentile(a.MaxRSSKB, 50), percentile(c.MaxRSSKB, 50)))
			}
		}
	}
	return b.String()
}
