package linux_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/mounts/decide"
)

// xToolsReq is a file-tools racer: TestXToolsHelper writes with mounts'
// Table.Write (the MCP write tool's and Files.Write's way in) in a process
// of its own, so that its decisions and a sandbox's broker meet only on
// the cross-process lock, not on the process's mutex.
type xToolsReq struct {
	WS      string
	Protect []string
	Tag     string
	Peers   int
	N       int
	// Mode is "config" (write r/config with Pager, then remove it) or
	// "refs" (write r/refs/heads/keep, which makes r/refs, then remove
	// r/refs).
	Mode  string
	Pager string
}

// runToolsRacer runs one file-tools racer: this test binary again, as the
// test's own user, running TestXToolsHelper.
func runToolsRacer(req xToolsReq) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	cmd := exec.Command(self, "-test.run", "^TestXToolsHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CORDON_XTOOLS="+string(data))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("the file-tools racer: %w: %s", err, out)
	}
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if strings.HasPrefix(line, "done ") {
			return line, nil
		}
	}
	return "", fmt.Errorf("the file-tools racer printed no count: %s", out)
}

// TestXToolsHelper is no test of its own: TestIntegrationBrokerAcrossSandboxes
// runs it in a process of its own to race the file tools against
// sandboxes (see xToolsReq).
func TestXToolsHelper(t *testing.T) {
	env := os.Getenv("CORDON_XTOOLS")
	if env == "" {
		t.Skip("a helper of TestIntegrationBrokerAcrossSandboxes")
	}
	var req xToolsReq
	if err := json.Unmarshal([]byte(env), &req); err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t)
	sb.Root, sb.Protect = req.WS, req.Protect
	table, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Print(toolsRace(table, req))
}

// toolsRace is xPrelude and xMkdirRefs/xRenameConfig's loop, written
// through the file tools.
func toolsRace(table *mounts.Table, req xToolsReq) string {
	ws := req.WS
	at := func(p string) string { return filepath.Join(ws, p) }
	if err := os.WriteFile(at("ready."+req.Tag), nil, 0o644); err != nil {
		return "ready: " + err.Error()
	}
	for range 20000 {
		if ents, _ := filepath.Glob(at("ready.*")); len(ents) >= req.Peers {
			break
		}
		time.Sleep(time.Millisecond)
	}
	done, errs := 0, map[string]int{}
	for range req.N {
		if _, err := os.Lstat(at("won")); err == nil {
			break
		}
		var err error
		if req.Mode == "config" {
			err = table.Write(at("r/config"), req.Pager)
		} else {
			err = table.Write(at("r/refs/heads/keep"), "x\n")
		}
		if err != nil {
			errs[errClass(err)]++
			continue
		}
		done++
		if st, err := os.Stat(at("r/refs")); err == nil && st.IsDir() && strings.Contains(readOr(at("r/config")), "pager") {
			win := fmt.Sprintf("%s: the file tools' %s write left r a repository with a pager config\n", req.Tag, req.Mode)
			_ = os.WriteFile(at("won"), []byte(win), 0o644)
			break
		}
		if req.Mode == "config" {
			_ = os.Remove(at("r/config"))
		} else {
			_ = os.RemoveAll(at("r/refs"))
		}
	}
	return fmt.Sprintf("done %d errors %v\n", done, errs)
}

func errClass(err error) string {
	switch {
	case errors.Is(err, mounts.ErrReadOnly):
		return "refused"
	case errors.Is(err, decide.ErrBusy):
		return "busy"
	}
	return err.Error()
}
