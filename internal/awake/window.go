package awake

import "time"

// Window is how long the keeper spins after the last Poke before it
// sleeps. A guest kernel's halt polling starts at 200 µs
// (guest_halt_poll_ns); a little more covers the work between two calls
// of tar, git checkout and npm, so a burst keeps its CPU, while a single
// call costs the host at most this much spinning.
const Window = 250 * time.Microsecond
