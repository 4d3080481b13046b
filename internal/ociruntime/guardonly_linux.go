package ociruntime

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
)

// A container with an allow list and no deny, protect or audit has the
// network guard and no broker (see brokered): its filter is the spec's
// profile, no listener is bound, and its supervisor is started only once
// create has handed the container over (the init's pidfd and the guard's
// device wait in the handoff socket for it). So the supervisor's start, a
// start of the whole binary, does not take a CPU from the init and the
// device while create waits for them; until the supervisor reads the
// device, the container's packets wait in it, as they do while a
// supervisor started first is still starting.

// createGuarded makes the container and the gate that hands it, then
// starts its supervisor (see gate.passGuard).
// pendingSupervisor is the pid file's content from create's container
// until its supervisor is spawned.
const pendingSupervisor = "pending"

func createGuarded(g *globals, id string, cfg *configs.Config, bc brokerConfig) (*libcontainer.Container, *supervised, error) {
	mine, theirs, err := handoffPair()
	if err != nil {
		return nil, nil, err
	}
	c, err := libcontainer.Create(g.root, id, cfg)
	if err != nil {
		mine.Close()
		theirs.Close()
		return nil, nil, err
	}
	// Until the supervisor is spawned the pid file says "pending": a
	// create killed between the init's start and the spawn leaves a
	// container whose start must be refused (supervisorServes), not one
	// that looks as if it needed no supervisor
	// (TestOCIStartAfterGuardedCreateKilled).
	if err := os.WriteFile(filepath.Join(g.root, id, brokerPidFile), []byte(pendingSupervisor), 0o600); err != nil {
		_ = c.Destroy()
		mine.Close()
		theirs.Close()
		return nil, nil, fmt.Errorf("record the broker: %w", err)
	}
	sup := &supervised{stop: func() {}}
	gt := newGate(bc, nil, mine)
	gt.peer = theirs
	gt.late = func(hand *os.File) error {
		pid, err := spawnBroker(g, hand, bc)
		if err != nil {
			return err
		}
		sup.stop = stopper(pid, func() {})
		if err := os.WriteFile(filepath.Join(g.root, id, brokerPidFile), []byte(strconv.Itoa(pid)), 0o600); err != nil {
			return fmt.Errorf("record the broker: %w", err)
		}
		return nil
	}
	gt.watch(filepath.Join(g.root, id))
	sup.gate = gt
	return c, sup, nil
}
