//go:build linux && cgo

package awake

import (
	"testing"
	"time"
)

// asleep waits until the keeper d sleeps with no spin under way (state S,
// the spin counter unchanged over 50 ms), and returns the counter.
func asleep(t *testing.T, d string) uint64 {
	t.Helper()
	for i := 0; i < 500; i++ {
		n := Spins()
		time.Sleep(50 * time.Millisecond)
		if Spins() == n && taskStat(t, d)[0] == "S" {
			return n
		}
	}
	t.Fatalf("the keeper (%s) did not go to sleep", d)
	return 0
}

// TestQuietSilencesPokes: while a Quiet lasts, Poke wakes no keeper (it
// stays asleep and takes no CPU) and Start reports false; overlapping
// Quiets end with the last resume, resume is idempotent, and after it a
// Poke wakes the keeper again.
func TestQuietSilencesPokes(t *testing.T) {
	d := startedKeeper(t)
	// pokeFor pokes for dur, or until the keeper runs if untilRun.
	pokeFor := func(dur time.Duration, untilRun bool) (ran bool) {
		for end := time.Now().Add(dur); time.Now().Before(end) && !(untilRun && ran); {
			Poke()
			ran = ran || taskStat(t, d)[0] == "R"
			time.Sleep(50 * time.Microsecond)
		}
		return ran
	}
	quietPokes := func(what string) {
		t.Helper()
		n, c0 := asleep(t, d), cpuTicks(t, d)
		if Start() {
			t.Fatalf("%s: Start reported a keeper while Pokes are quiet", what)
		}
		if pokeFor(300*time.Millisecond, false) {
			t.Fatalf("%s: the keeper ran when poked", what)
		}
		if s, c1 := Spins(), cpuTicks(t, d); s != n || c1 != c0 {
			t.Fatalf("%s: the keeper spun when poked (%d spins, %d clock ticks of CPU)", what, s-n, c1-c0)
		}
	}
	live := func(what string) {
		t.Helper()
		asleep(t, d)
		if !Start() {
			t.Fatalf("%s: Start reported no keeper", what)
		}
		if !pokeFor(5*time.Second, true) {
			t.Fatalf("%s: the keeper did not run when poked", what)
		}
	}
	live("before any Quiet")
	r1 := Quiet()
	quietPokes("one Quiet")
	r2 := Quiet()
	r1()
	r1() // idempotent: does not end r2's Quiet
	quietPokes("the second of two Quiets, the first resumed twice")
	r2()
	live("all Quiets resumed")
}
