package linux

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// TestRunWithoutInit: a program that never called Init gets a set-up error
// that says what is missing, before libcontainer re-executes it (which
// would run its own main instead of the sandbox's init); so does a
// session.
func TestRunWithoutInit(t *testing.T) {
	was := initCalled.Load()
	initCalled.Store(false)
	defer initCalled.Store(was)
	r, err := New(runner.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sb := &spec.Sandbox{Root: t.TempDir(), System: spec.System{Kind: spec.SystemHost}, RequireOSSandbox: true}
	res, err := r.Run(context.Background(), runner.Request{Sandbox: sb, Args: []string{"true"}})
	if err != nil || res.FailureType != runner.FailureSetupError || !strings.Contains(res.FailureDetail, "cordon.Init() (runner.Init) was not called") {
		t.Fatalf("Run without Init: %+v %v", res, err)
	}
	_, err = r.(*linuxRunner).StartSession(context.Background(), runner.SessionRequest{Sandbox: sb})
	if !errors.Is(err, ErrNoInit) {
		t.Fatalf("StartSession without Init: %v", err)
	}
}
