//go:build linux

// Command benchsession measures warm sessions for hack/bench, side by side
// in one run:
//
//   - the Go API's Session.Exec of `true` against a bare fork and exec of
//     `true` from Go (exec.Command), interleaved;
//   - `cordon session start` against `cordon run -- true`, interleaved
//     (each start is followed by a stop, which is not timed);
//   - CONC `cordon exec` clients at once in one session, each running
//     `true` in a loop: every exec must succeed; it reports the throughput.
//
// It prints a markdown table. It must be built with the seccomp tag: it
// starts sandboxes itself (the Go API), so it carries cordon's init.
//
//	benchsession -cordon bin/cordon -config bench.yaml -dir WORK [-n 200] [-conc 20]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cordon-run/cordon"
)

func main() {
	cordon.Init()
	bin := flag.String("cordon", "bin/cordon", "the cordon `BINARY`")
	config := flag.String("config", "", "the sandbox config `FILE`")
	dir := flag.String("dir", ".", "the working `DIR` (the config's workspace)")
	n := flag.Int("n", 200, "measured execs per case")
	conc := flag.Int("conc", 20, "concurrent `cordon exec` clients")
	flag.Parse()
	if err := run(*bin, *config, *dir, *n, *conc); err != nil {
		fmt.Fprintf(os.Stderr, "benchsession: %v\n", err)
		os.Exit(1)
	}
}

func run(bin, config, dir string, n, conc int) error {
	if err := os.Chdir(dir); err != nil {
		return err
	}
	p, err := cordon.LoadConfig(config)
	if err != nil {
		return err
	}
	sb, err := p.Sandbox()
	if err != nil {
		return err
	}
	s, err := sb.StartSession(context.Background())
	if err != nil {
		return fmt.Errorf("start a session: %w", err)
	}
	defer s.Close()
	var api, bare []int64
	for i := 0; i < n+10; i++ {
		t := time.Now()
		res, err := s.Exec(context.Background(), []string{"true"})
		d := time.Since(t).Nanoseconds()
		if err != nil || res.ExitCode != 0 {
			return fmt.Errorf("exec: %+v %v", res, err)
		}
		t = time.Now()
		if err := exec.Command("true").Run(); err != nil {
			return err
		}
		if i >= 10 {
			api, bare = append(api, d), append(bare, time.Since(t).Nanoseconds())
		}
	}

	var starts, runs []int64
	name := fmt.Sprintf("bench-start-%d", os.Getpid())
	for i := 0; i < 12; i++ {
		t := time.Now()
		if out, err := exec.Command(bin, "session", "start", "--config", config, "--name", name).CombinedOutput(); err != nil {
			return fmt.Errorf("session start: %v: %s", err, out)
		}
		d := time.Since(t).Nanoseconds()
		if out, err := exec.Command(bin, "session", "stop", name).CombinedOutput(); err != nil {
			return fmt.Errorf("session stop: %v: %s", err, out)
		}
		t = time.Now()
		if out, err := exec.Command(bin, "run", "--config", config, "--", "true").CombinedOutput(); err != nil {
			return fmt.Errorf("run: %v: %s", err, out)
		}
		if i >= 2 {
			starts, runs = append(starts, d), append(runs, time.Since(t).Nanoseconds())
		}
	}

	cname := fmt.Sprintf("bench-conc-%d", os.Getpid())
	if out, err := exec.Command(bin, "session", "start", "--config", config, "--name", cname).CombinedOutput(); err != nil {
		return fmt.Errorf("session start: %v: %s", err, out)
	}
	defer func() { _ = exec.Command(bin, "session", "stop", cname).Run() }()
	per := max(1, n/conc*5)
	var ok, failed atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	t := time.Now()
	for c := 0; c < conc; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				out, err := exec.Command(bin, "exec", cname, "--", "true").CombinedOutput()
				if err != nil {
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%v: %s", err, out)
					}
					mu.Unlock()
					continue
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t)

	w := func(format string, a ...any) { fmt.Printf(format, a...) }
	w("| session case | median ms | p90 ms | min ms | versus | its median ms | ratio |\n|---|---:|---:|---:|---|---:|---:|\n")
	row := func(name string, xs []int64, other string, ys []int64) {
		w("| %s | %s | %s | %s | %s | %s | %.2f |\n", name, ms(pct(xs, 50)), ms(pct(xs, 90)), ms(slices.Min(xs)),
			other, ms(pct(ys, 50)), float64(pct(xs, 50))/float64(pct(ys, 50)))
	}
	row("Go API `Session.Exec(true)`", api, "bare `exec.Command(\"true\").Run()`", bare)
	row("`cordon session start`", starts, "`cordon run -- true`", runs)
	w("\n%d concurrent `cordon exec NAME -- true` clients, %d execs each: %d succeeded, %d failed, %.0f execs/s\n",
		conc, per, ok.Load(), failed.Load(), float64(ok.Load())/elapsed.Seconds())
	if failed.Load() > 0 {
		return errors.Join(fmt.Errorf("%d concurrent execs failed", failed.Load()), firstErr)
	}
	return nil
}

func pct(xs []int64, p float64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(ns int64) string { return strings.TrimSpace(fmt.Sprintf("%6.2f", float64(ns)/1e6)) }
