package session

import (
	"fmt"
	"sync"
	"time"
)

// lifecycle stops a session by itself: after its idle timeout with no exec
// running, and at its maximum lifetime. The libcontainer session uses it; a future backend's would too.
type lifecycle struct {
	mu      sync.Mutex
	idleFor time.Duration
	running int
	idle    *time.Timer
	life    *time.Timer
	stop    func(reason string)
	done    bool
}

// start arms the timers; stop is called at most once, with the reason.
func (l *lifecycle) start(idle, life time.Duration, stop func(reason string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.idleFor, l.stop = idle, stop
	if life > 0 {
		l.life = time.AfterFunc(life, func() {
			l.fire(false, fmt.Sprintf("it stopped itself at its maximum lifetime of %s (session.max_lifetime)", life))
		})
	}
	l.armIdle()
}

func (l *lifecycle) armIdle() {
	if l.idleFor <= 0 || l.running > 0 || l.done {
		return
	}
	if l.idle == nil {
		d := l.idleFor
		l.idle = time.AfterFunc(d, func() {
			l.fire(true, fmt.Sprintf("it stopped itself after %s without a command (session.idle_timeout)", d))
		})
		return
	}
	l.idle.Reset(l.idleFor)
}

func (l *lifecycle) fire(idle bool, reason string) {
	l.mu.Lock()
	if l.done || (idle && l.running > 0) {
		l.mu.Unlock() // an exec started as the idle timer fired
		return
	}
	l.done = true
	stop := l.stop
	l.mu.Unlock()
	if stop != nil {
		stop(reason)
	}
}

// begin and end bracket an exec: no idle timeout while one runs.
func (l *lifecycle) begin() {
	l.mu.Lock()
	l.running++
	if l.idle != nil {
		l.idle.Stop()
	}
	l.mu.Unlock()
}

func (l *lifecycle) end() {
	l.mu.Lock()
	l.running--
	l.armIdle()
	l.mu.Unlock()
}

// close stops the timers.
func (l *lifecycle) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	for _, t := range []*time.Timer{l.idle, l.life} {
		if t != nil {
			t.Stop()
		}
	}
}
