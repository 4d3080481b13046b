package decide

import "sync"

// lockMu serializes, in this process, every decision the shape rules make
// and the call each one decides: the broker's (of every sandbox this
// process serves) and the file tools'.
var lockMu sync.Mutex

// Lock takes the lock for the decisions on directory d (nil when the
// writer has not resolved it yet) and returns its release. A writer holds
// it from a decision by Make, Write or ReplaceConfig until the call it
// decided (and a Rewrite) is done, so that no other call completes a
// shape in between.
//
// This is the one seam for a lock that holds across processes (several
// sandboxes on one workspace): today it is one mutex for the process,
// which also covers every d.
func Lock(d Dir) func() {
	_ = d
	lockMu.Lock()
	return lockMu.Unlock
}
