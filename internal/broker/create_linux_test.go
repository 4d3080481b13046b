package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// createCases are the opens TestBrokerChildOpens makes, in order: the
// name opened in its directory and the flags.
var createCases = []struct {
	name, path string
	flags      int
}{
	{"new-file", "new", unix.O_CREAT | unix.O_WRONLY},
	{"existing-no-excl", "old", unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC},
	{"existing-excl", "old2", unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY},
	{"symlink-excl", "link-free", unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY},
	{"symlink-followed", "link-free2", unix.O_CREAT | unix.O_WRONLY},
	{"symlink-to-protected", "link-prot", unix.O_CREAT | unix.O_WRONLY},
	{"protected-new", "newprot", unix.O_CREAT | unix.O_WRONLY},
	{"protected-existing", "prot", unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC},
}

// TestBrokerCreateFastPath: an open with O_CREAT whose path the policy
// lets be made is tried as a create at once, with no look at the name
// first (plainCreate). A name that exists is then opened as it exists
// (truncated, the same file) or is the kernel's EEXIST with O_EXCL (a
// symlink too: O_EXCL never follows one); a dangling symlink is followed
// and its target decided: one to a protected path is refused, with
// nothing made there; a protected name, new or existing, is refused and
// left as it was. Each answer is the one the kernel gives without a
// broker, but for the refusals (EACCES).
func TestBrokerCreateFastPath(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	at := func(name string) string { return filepath.Join(dir, name) }
	for _, f := range []string{"old", "old2", "prot"} {
		if err := os.WriteFile(at(f), []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link-free": "free-target", "link-free2": "free-target2", "link-prot": "prot-new"} {
		if err := os.Symlink(target, at(link)); err != nil {
			t.Fatal(err)
		}
	}
	var oldIno unix.Stat_t
	if err := unix.Stat(at("old"), &oldIno); err != nil {
		t.Fatal(err)
	}
	cmd, out, listener := startChildRun(t, "TestBrokerChildOpens", "CORDON_BROKER_OPENS_DIR="+dir)
	b := Start(listener, globPolicy{at("prot"), at("prot-new"), at("newprot")}, Creds{})
	werr := cmd.Wait()
	b.Stop()
	if werr != nil {
		t.Fatalf("the child went wrong: %v\n%s", werr, out.String())
	}
	got := map[string]unix.Errno{}
	for _, line := range strings.Split(out.String(), "\n") {
		if name, n, ok := strings.Cut(strings.TrimPrefix(line, "open "), " errno "); ok && strings.HasPrefix(line, "open ") {
			e, _ := strconv.Atoi(n)
			got[name] = unix.Errno(e)
		}
	}
	content := func(name string) string {
		data, err := os.ReadFile(at(name))
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return string(data)
	}
	absent := func(name string) string {
		if _, err := os.Lstat(at(name)); !os.IsNotExist(err) {
			return "(exists)"
		}
		return "(absent)"
	}
	rows := []struct {
		name    string
		errno   unix.Errno
		check   func() string
		want    string
		refused string // the denial's path
	}{
		{"new-file", 0, func() string { return content("new") }, "y", ""},
		{"existing-no-excl", 0, func() string {
			var st unix.Stat_t
			if unix.Stat(at("old"), &st) != nil || st.Ino != oldIno.Ino {
				return "(another file)"
			}
			return content("old")
		}, "y", ""},
		{"existing-excl", unix.EEXIST, func() string { return content("old2") }, "keep", ""},
		{"symlink-excl", unix.EEXIST, func() string { return absent("free-target") }, "(absent)", ""},
		{"symlink-followed", 0, func() string { return content("free-target2") }, "y", ""},
		{"symlink-to-protected", unix.EACCES, func() string { return absent("prot-new") }, "(absent)", at("prot-new")},
		{"protected-new", unix.EACCES, func() string { return absent("newprot") }, "(absent)", at("newprot")},
		{"protected-existing", unix.EACCES, func() string { return content("prot") }, "keep", at("prot")},
	}
	denied := map[string]bool{}
	for _, d := range b.Denials() {
		denied[d.Path] = true
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			if e, ok := got[tc.name]; !ok || e != tc.errno {
				t.Errorf("open answered %v (reported: %v), want %v\n%s", e, ok, tc.errno, out.String())
			}
			if s := tc.check(); s != tc.want {
				t.Errorf("after the open: %s, want %s", s, tc.want)
			}
			if tc.refused != "" && !denied[tc.refused] {
				t.Errorf("no refusal of %s recorded: %+v", tc.refused, b.Denials())
			}
		})
	}
}

// TestBrokerChildOpens is not a test: it is the process
// TestBrokerCreateFastPath starts. It installs the filter, sends the
// listener over descriptor 3 and makes each of createCases' opens in
// CORDON_BROKER_OPENS_DIR, printing each one's errno and writing "y"
// through each descriptor it gets.
func TestBrokerChildOpens(t *testing.T) {
	dir := os.Getenv("CORDON_BROKER_OPENS_DIR")
	if dir == "" {
		t.Skip("the child of TestBrokerCreateFastPath")
	}
	runtime.LockOSThread()
	sendCreatesListener(t)
	for _, c := range createCases {
		fd, err := unix.Openat(unix.AT_FDCWD, filepath.Join(dir, c.path), c.flags|unix.O_CLOEXEC, 0o644)
		errno, _ := err.(unix.Errno)
		fmt.Printf("open %s errno %d\n", c.name, int(errno))
		if err == nil {
			_, _ = unix.Write(fd, []byte("y"))
			unix.Close(fd)
		}
	}
}

// sendCreatesListener, in a test's child, installs notifyCreatesFilter on
// this thread (no_new_privs first) and sends its listener to the parent
// over descriptor 3.
func sendCreatesListener(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	prog := notifyCreatesFilter()
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	l, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fp)))
	if e != 0 {
		t.Fatalf("seccomp: %v", e)
	}
	if err := unix.Sendmsg(3, []byte{'L'}, unix.UnixRights(int(l)), nil, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(int(l))
}
