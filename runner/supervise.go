//go:build unix

package runner

import (
	"context"
	"syscall"
	"time"
)

// KeyInterruptWindow is how soon after one ^C typed at a TTY run a second
// one kills the sandbox. With a terminal, ^C is a keystroke that the
// sandbox's own terminal turns into SIGINT for the command's foreground
// job, and cordon never receives a signal; a command that traps or
// ignores SIGINT would otherwise be unstoppable from the keyboard. The
// window keeps an interactive shell, where ^C only clears the line, alive
// for presses that are not in a hurry.
const KeyInterruptWindow = 2 * time.Second

// Supervised is what the supervision loop needs of a started sandbox. Every
// backend supervises its runs with Supervise, so the timeout, cancellation,
// signal forwarding, terminal resizing and the second interrupt behave alike
// on every OS.
type Supervised struct {
	// Done is closed when the command (the sandbox's first process) has
	// exited.
	Done <-chan struct{}
	// Signal forwards a signal to the command.
	Signal func(syscall.Signal)
	// Kill kills every process of the sandbox. It may be called more than
	// once.
	Kill func()
	// Resize copies the host terminal's size to the command's; nil when the
	// command has no terminal.
	Resize func()
	// Keys, for a TTY run, carries each ^C typed at the command's terminal
	// (see CopyKeys); a second within KeyInterruptWindow of the one before
	// kills the sandbox.
	Keys <-chan struct{}
	// Every, when above zero, calls Tick at that interval while the command
	// runs (the Seatbelt backend records the processes that might leave
	// its session).
	Every time.Duration
	Tick  func()
}

// Ended is how supervision ended, besides the command's own exit.
type Ended struct {
	// TimedOut: the request's effective timeout killed the sandbox.
	TimedOut bool
	// Canceled: the caller's context, a second SIGINT or SIGTERM, or a
	// second ^C at a TTY run's terminal killed the sandbox.
	Canceled bool
	// Interrupted: it was the second interrupt (signal or ^C).
	Interrupted bool
}

// Supervise waits for s.Done, forwarding req.Signals, until the command
// exits. The effective timeout and the end of ctx kill the whole sandbox; so
// does a second SIGINT or SIGTERM, as a command that runs as PID 1 of its
// namespace ignores signals it installed no handler for. SIGWINCH resizes
// the terminal instead of being forwarded. At a TTY run, ^C is a keystroke
// the sandbox's terminal delivers itself; a second one within
// KeyInterruptWindow kills the whole sandbox. Supervise returns only after
// s.Done is closed: a killed sandbox is waited for.
func Supervise(ctx context.Context, req Request, s Supervised) Ended {
	var end Ended
	var timeoutC <-chan time.Time
	if t := req.EffectiveTimeout(); t > 0 {
		timer := time.NewTimer(t)
		defer timer.Stop()
		timeoutC = timer.C
	}
	var tickC <-chan time.Time
	if s.Every > 0 && s.Tick != nil {
		ticker := time.NewTicker(s.Every)
		defer ticker.Stop()
		tickC = ticker.C
	}
	ctxDone, sigC := ctx.Done(), req.Signals
	interrupts := 0
	var lastKey time.Time
	for {
		select {
		case <-s.Done:
			return end
		case <-s.Keys:
			now := time.Now()
			if !lastKey.IsZero() && now.Sub(lastKey) <= KeyInterruptWindow {
				end.Canceled, end.Interrupted = true, true
				s.Kill()
			}
			lastKey = now
		case <-tickC:
			s.Tick()
		case <-timeoutC:
			end.TimedOut = true
			s.Kill()
		case <-ctxDone:
			ctxDone = nil // closed for good: kill once, then wait
			end.Canceled = true
			s.Kill()
		case sig, open := <-sigC:
			if !open {
				sigC = nil
				continue
			}
			sys, ok := sig.(syscall.Signal)
			switch {
			case !ok:
			case sys == syscall.SIGWINCH:
				if s.Resize != nil {
					s.Resize()
				}
			case (sys == syscall.SIGINT || sys == syscall.SIGTERM) && interrupts > 0:
				end.Canceled, end.Interrupted = true, true
				s.Kill()
			default:
				if sys == syscall.SIGINT || sys == syscall.SIGTERM {
					interrupts++
				}
				s.Signal(sys)
			}
		}
	}
}
