//go:build unix

package runner

import (
	"context"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-run/cordon/spec"
)

// fakeSandbox records what the loop asked of it; Kill ends it.
type fakeSandbox struct {
	mu       sync.Mutex
	done     chan struct{}
	once     sync.Once
	signals  []syscall.Signal
	kills    int
	resizes  int
	ticks    int
	exitOnSi syscall.Signal
}

func newFake() *fakeSandbox { return &fakeSandbox{done: make(chan struct{})} }

func (f *fakeSandbox) end() { f.once.Do(func() { close(f.done) }) }

func (f *fakeSandbox) supervised() Supervised {
	return Supervised{
		Done: f.done,
		Signal: func(s syscall.Signal) {
			f.mu.Lock()
			f.signals = append(f.signals, s)
			f.mu.Unlock()
			if s == f.exitOnSi {
				f.end()
			}
		},
		Kill: func() {
			f.mu.Lock()
			f.kills++
			f.mu.Unlock()
			f.end()
		},
		Resize: func() { f.mu.Lock(); f.resizes++; f.mu.Unlock() },
		Every:  5 * time.Millisecond,
		Tick:   func() { f.mu.Lock(); f.ticks++; f.mu.Unlock() },
	}
}

func TestSupervise(t *testing.T) {
	t.Run("exit", func(t *testing.T) {
		f := newFake()
		go func() { time.Sleep(30 * time.Millisecond); f.end() }()
		end := Supervise(context.Background(), Request{}, f.supervised())
		if end != (Ended{}) || f.kills != 0 {
			t.Fatalf("end %+v kills %d; want a plain exit", end, f.kills)
		}
		if f.ticks == 0 {
			t.Error("Tick never ran")
		}
	})
	t.Run("timeout kills", func(t *testing.T) {
		f := newFake()
		end := Supervise(context.Background(), Request{Timeout: 20 * time.Millisecond}, f.supervised())
		if !end.TimedOut || end.Canceled || f.kills != 1 {
			t.Fatalf("end %+v kills %d; want timed out, one kill", end, f.kills)
		}
	})
	t.Run("sandbox timeout is shorter", func(t *testing.T) {
		f := newFake()
		start := time.Now()
		sb := &spec.Sandbox{Limits: spec.Limits{Timeout: 20 * time.Millisecond}}
		end := Supervise(context.Background(), Request{Sandbox: sb, Timeout: time.Hour}, f.supervised())
		if !end.TimedOut || time.Since(start) > 10*time.Second {
			t.Fatalf("end %+v after %s", end, time.Since(start))
		}
	})
	t.Run("context cancel kills once and waits", func(t *testing.T) {
		f := newFake()
		sup := f.supervised()
		sup.Kill = func() { f.mu.Lock(); f.kills++; f.mu.Unlock(); time.AfterFunc(30*time.Millisecond, f.end) }
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		end := Supervise(ctx, Request{}, sup)
		if !end.Canceled || f.kills != 1 {
			t.Fatalf("end %+v kills %d; want canceled, exactly one kill while waiting", end, f.kills)
		}
	})
	t.Run("signals", func(t *testing.T) {
		f := newFake()
		f.exitOnSi = syscall.SIGUSR2
		sigs := make(chan os.Signal, 8)
		sigs <- syscall.SIGWINCH
		sigs <- syscall.SIGHUP
		sigs <- os.Interrupt
		sigs <- syscall.SIGUSR2
		end := Supervise(context.Background(), Request{Signals: sigs}, f.supervised())
		want := []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGUSR2}
		if end != (Ended{}) || !slices.Equal(f.signals, want) || f.resizes != 1 || f.kills != 0 {
			t.Fatalf("end %+v signals %v resizes %d kills %d; want %v forwarded, SIGWINCH as a resize", end, f.signals, f.resizes, f.kills, want)
		}
	})
	t.Run("second interrupt kills the sandbox", func(t *testing.T) {
		f := newFake()
		sigs := make(chan os.Signal, 2)
		sigs <- syscall.SIGTERM
		sigs <- os.Interrupt
		end := Supervise(context.Background(), Request{Signals: sigs}, f.supervised())
		if !end.Canceled || f.kills != 1 || !slices.Equal(f.signals, []syscall.Signal{syscall.SIGTERM}) {
			t.Fatalf("end %+v kills %d signals %v; want the first forwarded, the second a kill", end, f.kills, f.signals)
		}
	})
	t.Run("second ^C key kills the sandbox", func(t *testing.T) {
		f := newFake()
		sup := f.supervised()
		keys := make(chan struct{}, 2)
		keys <- struct{}{}
		keys <- struct{}{}
		sup.Keys = keys
		end := Supervise(context.Background(), Request{}, sup)
		if !end.Canceled || !end.Interrupted || f.kills != 1 || len(f.signals) != 0 {
			t.Fatalf("end %+v kills %d signals %v; want a kill on the second ^C and nothing forwarded", end, f.kills, f.signals)
		}
	})
	t.Run("one ^C key does not kill", func(t *testing.T) {
		f := newFake()
		sup := f.supervised()
		keys := make(chan struct{}, 1)
		keys <- struct{}{}
		sup.Keys = keys
		go func() {
			for len(keys) > 0 {
				time.Sleep(5 * time.Millisecond)
			}
			f.end()
		}()
		if end := Supervise(context.Background(), Request{}, sup); end != (Ended{}) || f.kills != 0 {
			t.Fatalf("end %+v kills %d; want a plain exit", end, f.kills)
		}
	})
	t.Run("closed signal channel", func(t *testing.T) {
		f := newFake()
		sigs := make(chan os.Signal)
		close(sigs)
		go func() { time.Sleep(20 * time.Millisecond); f.end() }()
		if end := Supervise(context.Background(), Request{Signals: sigs}, f.supervised()); end != (Ended{}) {
			t.Fatalf("end %+v", end)
		}
	})
}
