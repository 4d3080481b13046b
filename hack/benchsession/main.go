//go:build linux

// Command benchsession measures warm sessions for hack/bench, side by side
// in one run:
//
//   - the Go API's Session.Exec of `true` against a bare fork and exec of
//     `true` from Go (exec.Command), interleaved;
//   - `cordon session start` against `cordon run -- true`, interleaved
//     (each start is followed by a stop, which is not timed);
//   - CONC `cordon exec` clients at once in one session, each running
//     `true` in a loop (two warm execs each, then at least 50 timed):
//     every exec must succeed; it reports the throughput, and that of the
//     warm-up burst apart.
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
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
	flag.BoolVar(&cpuPer, "cpu", false, "run only N Go API execs of `true` in one session and report the CPU time per exec of the supervisor and the sandbox together")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the Go API loop to `FILE`, and stop after it")
	flag.Parse()
	if err := run(*bin, *config, *dir, *n, *conc); err != nil {
		fmt.Fprintf(os.Stderr, "benchsession: %v\n", err)
		os.Exit(1)
	}
}

// cpuProfile, when set, profiles the Go API loop alone.
var cpuProfile string

// cpuPer measures the CPU an exec costs instead of its latency.
var cpuPer bool

// selfCPU is this process's CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sandboxCPU is the CPU time used so far in the cgroup of the session
// whose init is a child of this process: its init, shims and commands.
func sandboxCPU() (time.Duration, error) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) || !strings.Contains(string(cmd), "cordon-session-init") {
			continue
		}
		cg, err := os.ReadFile("/proc/" + e.Name() + "/cgroup")
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(string(cg), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			if strings.Contains(parts[1], "cpuacct") {
				b, err := os.ReadFile("/sys/fs/cgroup/" + parts[1] + parts[2] + "/cpuacct.usage")
				if err != nil {
					return 0, err
				}
				ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
				return time.Duration(ns), err
			}
			if parts[0] == "0" && parts[1] == "" {
				b, err := os.ReadFile("/sys/fs/cgroup" + parts[2] + "/cpu.stat")
				if err != nil {
					continue
				}
				var us int64
				_, err = fmt.Sscanf(string(b), "usage_usec %d", &us)
				return time.Duration(us) * time.Microsecond, err
			}
		}
	}
	return 0, errors.New("no session init with a CPU cgroup found among this process's children")
}

// measureCPU reports the CPU time per Go API exec of true: this process's
// and the sandbox's cgroup's (its init, shims and commands), over n execs.
func measureCPU(sb *cordon.Sandbox, n int) error {
	s, err := sb.StartSession(context.Background())
	if err != nil {
		return err
	}
	defer s.Close()
	one := func() error {
		if res, err := s.Exec(context.Background(), []string{"true"}); err != nil || res.ExitCode != 0 {
			return fmt.Errorf("exec: %+v %v", res, err)
		}
		return nil
	}
	for i := 0; i < 10; i++ {
		if err := one(); err != nil {
			return err
		}
	}
	self, sandbox := selfCPU(), time.Duration(0)
	if sandbox, err = sandboxCPU(); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := one(); err != nil {
			return err
		}
	}
	sandbox2, err := sandboxCPU()
	if err != nil {
		return err
	}
	sup := selfCPU() - self
	// The floor: exec.Command("true").Run(), this process and the child.
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	bare := selfCPU() + time.Duration(ru.Utime.Nano()+ru.Stime.Nano())
	for i := 0; i < n; i++ {
		if err := exec.Command("true").Run(); err != nil {
			return err
		}
	}
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	bare = selfCPU() + time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) - bare
	per := func(d time.Duration) float64 { return float64(d) / float64(n) / 1e6 }
	fmt.Printf("CPU per Go API exec of true, %d execs: supervisor %.3f ms, sandbox %.3f ms, total %.3f ms; bare exec.Command(\"true\").Run() %.3f ms\n",
		n, per(sup), per(sandbox2-sandbox), per(sup+sandbox2-sandbox), per(bare))
	return nil
}

func run(bin, config, dir string, n, conc int) error {
	if cpuProfile != "" && !filepath.IsAbs(cpuProfile) {
		cpuProfile = filepath.Join(must(os.Getwd()), cpuProfile)
	}
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
	if cpuPer {
		return measureCPU(sb, n)
	}
	api, bare, err := measureAPI(sb, n)
	if err != nil || api == nil {
		return err
	}

	// 60 timed pairs after 2 warm-ups: both times are bimodal on a shared
	// host (a cgroup write waits for an RCU grace period, or not), so 25
	// pairs gave ratios from 0.71 to 1.19 within an hour, where 60 gave
	// 0.77 and 0.85.
	var starts, runs []int64
	name := fmt.Sprintf("bench-start-%d", os.Getpid())
	for i := 0; i < 62; i++ {
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
	// Each client first runs warm execs, untimed, as every other case
	// gets warm-ups: the first burst of concurrent execs makes the
	// session fork a shim for each (it starts with two spares). The
	// timed run is long enough (at least 1,000 execs) that its start and
	// end, when fewer than conc clients are running, weigh little.
	per := max(50, n/conc*5)
	var ok, failed atomic.Int64
	var firstErr error
	var mu sync.Mutex
	burst := func(count int) time.Duration {
		var wg sync.WaitGroup
		t := time.Now()
		for c := 0; c < conc; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < count; i++ {
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
		return time.Since(t)
	}
	const warm = 2
	warmElapsed := burst(warm)
	warmOK := ok.Swap(0)
	elapsed := burst(per)

	w := func(format string, a ...any) { fmt.Printf(format, a...) }
	w("| session case | median ms | p90 ms | min ms | versus | its median ms | ratio |\n|---|---:|---:|---:|---|---:|---:|\n")
	row := func(name string, xs []int64, other string, ys []int64) {
		w("| %s | %s | %s | %s | %s | %s | %.2f |\n", name, ms(pct(xs, 50)), ms(pct(xs, 90)), ms(slices.Min(xs)),
			other, ms(pct(ys, 50)), float64(pct(xs, 50))/float64(pct(ys, 50)))
	}
	row("Go API `Session.Exec(true)`", api, "bare `exec.Command(\"true\").Run()`", bare)
	row("`cordon session start`", starts, "`cordon run -- true`", runs)
	w("\n%d concurrent `cordon exec NAME -- true` clients, %d execs each after %d warm ones: %d succeeded, %d failed, %.0f execs/s (the warm-up burst, which forks the shims: %.0f execs/s)\n",
		conc, per, warm, ok.Load(), failed.Load(), float64(ok.Load())/elapsed.Seconds(), float64(warmOK)/warmElapsed.Seconds())
	if failed.Load() > 0 {
		return errors.Join(fmt.Errorf("%d concurrent execs failed", failed.Load()), firstErr)
	}
	return nil
}

// measureAPI times n Go API execs of true, interleaved with bare execs;
// with -cpuprofile it profiles them, prints the medians and returns nil.
func measureAPI(sb *cordon.Sandbox, n int) (api, bare []int64, err error) {
	s, err := sb.StartSession(context.Background())
	if err != nil {
		return nil, nil, fmt.Errorf("start a session: %w", err)
	}
	defer s.Close()
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, nil, err
		}
	}
	for i := 0; i < n+10; i++ {
		t := time.Now()
		res, err := s.Exec(context.Background(), []string{"true"})
		d := time.Since(t).Nanoseconds()
		if err != nil || res.ExitCode != 0 {
			return nil, nil, fmt.Errorf("exec: %+v %v", res, err)
		}
		t = time.Now()
		if err := exec.Command("true").Run(); err != nil {
			return nil, nil, err
		}
		if i >= 10 {
			api, bare = append(api, d), append(bare, time.Since(t).Nanoseconds())
		}
	}
	if cpuProfile != "" {
		pprof.StopCPUProfile()
		fmt.Printf("Go API Session.Exec(true): median %s ms, p90 %s ms; bare exec %s ms\n", ms(pct(api, 50)), ms(pct(api, 90)), ms(pct(bare, 50)))
		return nil, nil, nil
	}
	return api, bare, nil
}

func pct(xs []int64, p float64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func ms(ns int64) string { return strings.TrimSpace(fmt.Sprintf("%6.2f", float64(ns)/1e6)) }
