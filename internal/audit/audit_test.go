package audit_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cordon-run/cordon/internal/attach"
	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// TestMain doubles as the writer process of the multi-process test: with
// AUDIT_HELPER_LOG set, it appends records and exits.
func TestMain(m *testing.M) {
	if path := os.Getenv("AUDIT_HELPER_LOG"); path != "" {
		id, _ := strconv.Atoi(os.Getenv("AUDIT_HELPER_ID"))
		if err := appendMany(audit.New(audit.ViaCLI, path), id, 4, 100); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// detail returns a record payload whose size varies up to ~96 KiB, larger
// than a pipe buffer and a page, so that unlocked appends would tear.
func detail(writer, goroutine, i int) string {
	n := (writer*7919 + goroutine*104729 + i*1299709) % (96 << 10)
	return fmt.Sprintf("w%d g%d i%d ", writer, goroutine, i) + strings.Repeat(string(rune('a'+i%26)), n)
}

// appendMany appends count records from each of goroutines goroutines.
func appendMany(l *audit.Log, writer, goroutines, count int) error {
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < count; i++ {
				if err := l.Append(audit.Record{Event: audit.EventDenial, Detail: detail(writer, g, i)}); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// readLog parses every line; a line that does not parse fails the test.
func readLog(t *testing.T, path string) []audit.Record {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []audit.Record
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 4<<20)
	for n := 1; sc.Scan(); n++ {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d does not parse (interleaved?): %v", n, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkIntact verifies that each expected record is present exactly once
// with its payload whole.
func checkIntact(t *testing.T, recs []audit.Record, writers, goroutines, count int) {
	t.Helper()
	if len(recs) != writers*goroutines*count {
		t.Fatalf("%d records, want %d", len(recs), writers*goroutines*count)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		var w, g, i int
		if _, err := fmt.Sscanf(r.Detail, "w%d g%d i%d ", &w, &g, &i); err != nil {
			t.Fatalf("record payload %.40q: %v", r.Detail, err)
		}
		if r.Detail != detail(w, g, i) {
			t.Fatalf("record w%d g%d i%d is torn", w, g, i)
		}
		key := fmt.Sprint(w, g, i)
		if seen[key] {
			t.Fatalf("record w%d g%d i%d appears twice", w, g, i)
		}
		seen[key] = true
	}
}

// TestConcurrentAppendsGoroutines appends large records from many
// goroutines: every line parses and every record is whole.
func TestConcurrentAppendsGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := appendMany(audit.New(audit.ViaAPI, path), 0, 32, 25); err != nil {
		t.Fatal(err)
	}
	checkIntact(t, readLog(t, path), 1, 32, 25)
}

// TestConcurrentAppendsProcesses appends from several processes at once,
// each with several goroutines.
func TestConcurrentAppendsProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const procs = 6
	var cmds []*exec.Cmd
	for i := 0; i < procs; i++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "AUDIT_HELPER_LOG="+path, "AUDIT_HELPER_ID="+strconv.Itoa(i))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer process: %v", err)
		}
	}
	checkIntact(t, readLog(t, path), procs, 4, 100)
}

// TestAppendFailsClosed checks the files a log refuses to write, and that
// nothing is written through a symbolic link.
func TestAppendFailsClosed(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{
		"missing folder":   filepath.Join(dir, "no-such-dir", "audit.jsonl"),
		"a directory":      dir,
		"a symbolic link":  filepath.Join(dir, "link.jsonl"),
		"a named pipe":     filepath.Join(dir, "fifo"),
		"a character file": "/dev/null",
	}
	for name, path := range rows {
		t.Run(name, func(t *testing.T) {
			l := audit.New(audit.ViaCLI, path)
			err := l.Append(audit.Record{Event: audit.EventStart})
			var we *audit.WriteError
			if !errors.Is(err, audit.ErrWrite) || !errors.As(err, &we) || we.Path != path {
				t.Fatalf("Append to %s = %v, want a *WriteError for it", path, err)
			}
			if _, err := l.Start(&spec.Sandbox{}, []string{"true"}, nil); !errors.Is(err, audit.ErrWrite) {
				t.Errorf("Start = %v, want ErrWrite (the run must not start)", err)
			}
		})
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep\n" {
		t.Errorf("the symbolic link's target was written: %q", data)
	}
}

// TestAppendCreatesPrivateFile checks the mode of a new log and that every
// path of a log gets every record.
func TestAppendCreatesPrivateFile(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	l := audit.New(audit.ViaCLI, a, "", b, a)
	if got := l.Paths(); len(got) != 2 {
		t.Fatalf("paths = %v, want a and b once", got)
	}
	if err := l.Append(audit.Record{Event: audit.EventStart}, audit.Record{Event: audit.EventRun}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a, b} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", p, fi.Mode().Perm())
		}
		recs := readLog(t, p)
		if len(recs) != 2 || recs[0].Via != audit.ViaCLI || recs[0].PID != os.Getpid() || recs[0].Time.IsZero() || recs[0].Lineage == nil {
			t.Errorf("%s records = %+v", p, recs)
		}
	}
}

// TestNilLogWritesNothing checks that a disabled log never fails.
func TestNilLogWritesNothing(t *testing.T) {
	var l *audit.Log
	if l.Enabled() || audit.New(audit.ViaCLI).Enabled() {
		t.Fatal("an empty log is enabled")
	}
	run, err := l.Start(&spec.Sandbox{}, []string{"true"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Finish(audit.Outcome{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Denied(nil, &spec.WideningError{Worker: "w", Rule: spec.RuleNetwork}); err != nil {
		t.Fatal(err)
	}
}

// TestRunRecords checks a run's start, end and runner denial.
func TestRunRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	sb := &spec.Sandbox{Root: dir, System: spec.System{Kind: spec.SystemHost}, Lineage: []string{"a", "b"}}
	tb, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	l := audit.New(audit.ViaCLI, path)
	run, err := l.Start(sb, []string{"sh", "-c", "echo x > /usr/x"}, tb)
	if err != nil {
		t.Fatal(err)
	}
	err = run.Finish(audit.Outcome{ExitCode: 2, FailureType: "sandbox_denied", SandboxDenied: true, BlockedPath: "/usr/x",
		FailureDetail: "cannot write /usr/x", DurationMS: 42})
	if err != nil {
		t.Fatal(err)
	}
	digest, err := spec.SandboxDigest(sb)
	if err != nil {
		t.Fatal(err)
	}
	recs := readLog(t, path)
	if len(recs) != 3 {
		t.Fatalf("records = %+v, want start, run and denial", recs)
	}
	start, end, denial := recs[0], recs[1], recs[2]
	for _, r := range recs {
		if r.RunID != run.ID() || r.Sandbox != digest || strings.Join(r.Lineage, ">") != "a>b" || strings.Join(r.Command, " ") != "sh -c echo x > /usr/x" {
			t.Errorf("record %+v lacks the run's id, digest %s, lineage or command", r, digest)
		}
	}
	if start.Event != audit.EventStart || start.Result != nil {
		t.Errorf("start = %+v", start)
	}
	if end.Event != audit.EventRun || end.Result == nil || end.Result.ExitCode != 2 || end.Result.FailureType != "sandbox_denied" ||
		end.DurationMS == nil || *end.DurationMS != 42 {
		t.Errorf("run = %+v", end)
	}
	if denial.Event != audit.EventDenial || denial.Source != audit.SourceRunner || denial.Path != "/usr/x" || denial.Rule != mounts.RuleReadonly {
		t.Errorf("denial = %+v, want a runner denial of /usr/x by rule readonly", denial)
	}
}

// TestDenials checks which errors become denial records.
func TestDenials(t *testing.T) {
	dir := t.TempDir()
	sb := &spec.Sandbox{Root: dir, Deny: []string{dir + "/.env"}, System: spec.System{Kind: spec.SystemHost}}
	tb, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	_, denied := tb.Read(dir+"/.env", 0)
	_, missing := tb.Read(dir+"/missing", 0)
	err = errors.Join(
		&spec.WideningError{Worker: "greedy", Rule: spec.RuleNetwork, Detail: "asks for network"},
		fmt.Errorf("wrapped: %w", &attach.Error{Path: "x", Rule: attach.RuleCount, Err: attach.ErrCount, Detail: "too many"}),
		denied,
		missing,
		errors.New("unrelated"),
	)
	recs := audit.Denials(sb, err)
	var got []string
	for _, r := range recs {
		got = append(got, r.Source+":"+r.Rule)
		if r.Event != audit.EventDenial || r.Detail == "" || r.Sandbox == "" {
			t.Errorf("record %+v", r)
		}
	}
	if want := "derive:network,attach:count,query:deny"; strings.Join(got, ",") != want {
		t.Errorf("denials = %v, want %s", got, want)
	}
	if !errors.Is(missing, fs.ErrNotExist) || audit.IsPolicyRefusal(missing) {
		t.Errorf("a missing file is a refusal: %v", missing)
	}
}

// TestFinishWritesNetworkDecisions: one net record per decision of the
// network guard, in order, each with the run's id and the decision whole.
func TestFinishWritesNetworkDecisions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	sb := &spec.Sandbox{Root: dir, System: spec.System{Kind: spec.SystemHost}, Network: spec.Network{Enabled: true, Allow: []string{"github.com:443"}}}
	l := audit.New(audit.ViaCLI, path)
	run, err := l.Start(sb, []string{"curl", "https://github.io/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := []netguard.Event{
		{Proto: "dns", Host: "github.com", HostFrom: netguard.FromDNS, Addr: "192.0.2.7", Port: 53, Rule: "github.com:443", Decision: netguard.Allow},
		{Proto: "dns", Host: "github.io", HostFrom: netguard.FromDNS, Port: 53, Decision: netguard.Deny, Reason: netguard.ReasonDNSRefused,
			Detail: "DNS query for github.io is not in the allow list [github.com:443]"},
	}
	res := audit.Outcome{ExitCode: 6, FailureType: "network_denied", FailureDetail: evs[1].Detail, Network: evs}
	if err := run.Finish(res); err != nil {
		t.Fatal(err)
	}
	recs := readLog(t, path)
	if len(recs) != 4 {
		t.Fatalf("records = %+v, want start, run and two net records", recs)
	}
	for i, r := range recs[2:] {
		if r.Event != audit.EventNet || r.RunID != run.ID() || r.Network == nil || *r.Network != evs[i] || r.Detail != evs[i].Detail || r.Rule != evs[i].Rule {
			t.Errorf("net record %d = %+v, want %+v", i, r, evs[i])
		}
	}
	if recs[1].Result.FailureType != "network_denied" {
		t.Errorf("run = %+v", recs[1])
	}
}

// TestSessionNetworkRecordsTheTail: the decisions of a session made after
// its last exec are net records of the session's sandbox, with no run.
func TestSessionNetworkRecordsTheTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	sb := &spec.Sandbox{Root: dir, System: spec.System{Kind: spec.SystemHost}, Network: spec.Network{Enabled: true, Allow: []string{"github.com:443"}}, Lineage: []string{"base"}}
	l := audit.New(audit.ViaCLI, path)
	evs := []netguard.Event{{Proto: "tcp", Host: "github.com", HostFrom: netguard.FromSNI, Addr: "192.0.2.7", Port: 443, Rule: "github.com:443", Decision: netguard.Allow, BytesIn: 10}}
	if err := l.SessionNetwork(sb, evs); err != nil {
		t.Fatal(err)
	}
	digest, err := spec.SandboxDigest(sb)
	if err != nil {
		t.Fatal(err)
	}
	recs := readLog(t, path)
	if len(recs) != 1 || recs[0].Event != audit.EventNet || recs[0].RunID != "" || recs[0].Sandbox != digest ||
		len(recs[0].Lineage) != 1 || recs[0].Network == nil || *recs[0].Network != evs[0] || recs[0].Rule != evs[0].Rule {
		t.Fatalf("records = %+v, want one net record of the sandbox for %+v", recs, evs[0])
	}
}
