package broker

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkBrokeredCreate: what one create costs through the broker (an
// openat with O_CREAT, notified, decided with a policy that refuses
// nothing, performed and its descriptor installed), the child's own work
// on the file (a write, an fstat and a stat) included. Compare with
// BenchmarkNotifyFloor, the same child under a listener that does nothing.
func BenchmarkBrokeredCreate(b *testing.B) {
	cmd, out, listener := startChild(b, b.TempDir(), b.N)
	b.ResetTimer()
	br := Start(listener, allowAll{}, Creds{})
	if err := cmd.Wait(); err != nil {
		b.Fatalf("the child's creates went wrong: %v\n%s", err, out.String())
	}
	b.StopTimer()
	br.Stop()
}

// BenchmarkPlainCreate: the same child's creates with no filter at all.
// BenchmarkBrokeredCreate and BenchmarkNotifyFloor less this are the cost
// of a brokered call and of a do-nothing round trip.
func BenchmarkPlainCreate(b *testing.B) {
	cmd, out, fd := startChild(b, b.TempDir(), b.N, "CORDON_BROKER_CHILD_PLAIN=1")
	unix.Close(fd)
	b.ResetTimer()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("the child's creates went wrong: %v\n%s", err, out.String())
	}
}

// BenchmarkNotifyFloor: the same child's creates under a listener that
// answers each at once with SECCOMP_USER_NOTIF_FLAG_CONTINUE (the round
// trip alone, the floor under any broker of this kind).
func BenchmarkNotifyFloor(b *testing.B) {
	cmd, out, listener := startChild(b, b.TempDir(), b.N)
	defer unix.Close(listener)
	b.ResetTimer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var n notif
			if err := recv(listener, &n); err != nil {
				if err == unix.EINTR || err == unix.ENOENT && !orphaned(listener) {
					continue
				}
				return
			}
			respondContinue(listener, n.ID)
		}
	}()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("the child's creates went wrong: %v\n%s", err, out.String())
	}
	b.StopTimer()
	<-done
}
