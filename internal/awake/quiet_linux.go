//go:build linux && cgo

package awake

import "sync"

var (
	quietMu sync.Mutex
	// quietN counts the Quiets not yet resumed; quietKept is whether
	// Pokes were live when the first of them began.
	quietN    int
	quietKept bool
)

// Quiet makes Poke do nothing until the returned resume is called, so
// that the keeper does not spin while this process starts processes of
// its own. The caller bounds it (a session's exec resumes after
// ExecQuiet at most): while it lasts, the broker's calls go without the
// keeper.
//
// A session's exec is a chain of process starts and hand-offs (client,
// supervisor, shim, the command, and back) that runs on both CPUs of a
// small host at once. The shim's chdir before the command starts is a
// brokered call, whose Poke kept the keeper spinning through the
// command's start: that cost the exec 0.2 to 0.4 ms of its 3 ms in most
// runs on a 2-vCPU VM (docs/performance.md, "Sessions"), where the keeper saves
// back-to-back broker round trips far more. Overlapping Quiets end when
// the last one is resumed; a keeper already spinning finishes its Window.
// While a Quiet lasts, Start reports false. resume is idempotent. It sets
// no timer: a Go timer's arming wakes the runtime's poller thread, which
// cost the exec more than half of what the Quiet saved.
func Quiet() (resume func()) {
	quietMu.Lock()
	if quietN == 0 {
		quietKept = enabled.Load()
	}
	quietN++
	enabled.Store(false)
	quietMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			quietMu.Lock()
			quietN--
			if quietN == 0 && quietKept {
				enabled.Store(true)
			}
			quietMu.Unlock()
		})
	}
}
