package darwin

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseDenials(t *testing.T) {
	tag := "cordon-0123456789abcdef"
	tests := []struct {
		name string
		in   string
		want []Denial
	}{
		{
			"kernel log, compact style",
			"2025-03-01 10:00:00.123 E  kernel[0:1a2b] (Sandbox) Sandbox: touch(4242) deny(1) file-write-create /Users/u/x",
			[]Denial{{PID: 4242, Process: "touch", Operation: "file-write-create", Path: "/Users/u/x"}},
		},
		{
			"kernel log, default style, tag on the next line",
			"2025-03-01 10:00:00.123456+0100 0xc912c6   Error       0x0                  0      0    kernel: (Sandbox) Sandbox: bash(1234) deny(1) file-read-data /Users/u/.ssh/id_ed25519\n" + tag + "\n",
			[]Denial{{PID: 1234, Process: "bash", Operation: "file-read-data", Path: "/Users/u/.ssh/id_ed25519", Tag: tag}},
		},
		{
			"tag at the end of the line",
			"Sandbox: git(77) deny(1) file-write-unlink /Users/u/proj/.git " + tag,
			[]Denial{{PID: 77, Process: "git", Operation: "file-write-unlink", Path: "/Users/u/proj/.git", Tag: tag}},
		},
		{
			"process name and path with spaces",
			"Sandbox: Google Chrome He(501) deny(1) file-write-data /Users/u/My Documents/a b.txt",
			[]Denial{{PID: 501, Process: "Google Chrome He", Operation: "file-write-data", Path: "/Users/u/My Documents/a b.txt"}},
		},
		{
			"unix socket",
			"Sandbox: nc(86248) deny(1) network-outbound /private/var/run/syslog",
			[]Denial{{PID: 86248, Process: "nc", Operation: "network-outbound", Path: "/private/var/run/syslog"}},
		},
		{
			"ip address has no path",
			"Sandbox: curl(99) deny(1) network-outbound 93.184.216.34:443",
			[]Denial{{PID: 99, Process: "curl", Operation: "network-outbound"}},
		},
		{
			"mach lookup",
			"Sandbox: python3(12) deny(1) mach-lookup com.apple.coreservices.launchservicesd",
			[]Denial{{PID: 12, Process: "python3", Operation: "mach-lookup"}},
		},
		{
			"bare annotated line",
			"node(123) deny(1) file-write-create /private/tmp/foo/bar",
			[]Denial{{PID: 123, Process: "node", Operation: "file-write-create", Path: "/private/tmp/foo/bar"}},
		},
		{
			"log show ndjson",
			`{"timestamp":"2025-03-01 10:00:00.123456+0100","messageType":"Error","eventMessage":"Sandbox: cp(808) deny(1) file-write-create \/Users\/u\/out.txt\n` + tag + `","processImagePath":"\/kernel","senderImagePath":"\/System\/Library\/Extensions\/Sandbox.kext\/Contents\/MacOS\/Sandbox","processID":0}` + "\n" +
				`{"timestamp":"2025-03-01 10:00:00.200000+0100","eventMessage":"Sandbox: cp(808) deny(1) file-read-data \/Users\/u\/.netrc","processID":0}`,
			[]Denial{
				{PID: 808, Process: "cp", Operation: "file-write-create", Path: "/Users/u/out.txt", Tag: tag},
				{PID: 808, Process: "cp", Operation: "file-read-data", Path: "/Users/u/.netrc"},
			},
		},
		{
			"log show json array, pretty printed",
			"[{\n  \"eventMessage\" : \"Sandbox: sh(5) deny(1) file-write-create \\/etc\\/x\",\n  \"processID\" : 0\n},{\n  \"eventMessage\" : \"unrelated\"\n}]",
			[]Denial{{PID: 5, Process: "sh", Operation: "file-write-create", Path: "/etc/x"}},
		},
		{
			"ndjson mixed with a header line",
			"Filtering the log data using \"eventMessage CONTAINS \\\"x\\\"\"\n" +
				`{"eventMessage":"Sandbox: ls(9) deny(1) file-read-data \/Users\/u\/Desktop"}`,
			[]Denial{{PID: 9, Process: "ls", Operation: "file-read-data", Path: "/Users/u/Desktop"}},
		},
		{"bash", "bash: /x: Operation not permitted", []Denial{{Process: "bash", Path: "/x"}}},
		{"bash script line", "bash: line 1: /Users/u/proj/.git/hooks/pre-commit: Operation not permitted", []Denial{{Process: "bash", Path: "/Users/u/proj/.git/hooks/pre-commit"}}},
		{"touch", "touch: /x: Operation not permitted", []Denial{{Process: "touch", Path: "/x"}}},
		{"cp", "cp: /x: Operation not permitted", []Denial{{Process: "cp", Path: "/x"}}},
		{"cp with spaces", "cp: /Users/u/My Dir/x: Operation not permitted", []Denial{{Process: "cp", Path: "/Users/u/My Dir/x"}}},
		{"gnu cp quoted", "cp: cannot create regular file '/x/y': Operation not permitted", []Denial{{Process: "cp", Path: "/x/y"}}},
		{"gnu mkdir curly quotes", "mkdir: cannot create directory ‘/x/y’: Operation not permitted", []Denial{{Process: "mkdir", Path: "/x/y"}}},
		{"relative name", "touch: notes.txt: Operation not permitted", []Denial{{Process: "touch", Path: "notes.txt"}}},
		{"python", "PermissionError: [Errno 1] Operation not permitted: '/x'", []Denial{{Path: "/x"}}},
		{"python double quotes", `PermissionError: [Errno 1] Operation not permitted: "/a'b"`, []Denial{{Path: "/a'b"}}},
		{"python rename", "PermissionError: [Errno 1] Operation not permitted: '/a' -> '/b'", []Denial{{Path: "/a"}}},
		{"node", "Error: EPERM: operation not permitted, open '/Users/u/x.json'", []Denial{{Path: "/Users/u/x.json"}}},
		{"node rename", "Error: EPERM: operation not permitted, rename '/a' -> '/b'", []Denial{{Path: "/a"}, {Path: "/b"}}},
		{"go open", "open /Users/u/x: operation not permitted", []Denial{{Path: "/Users/u/x"}}},
		{"go rename", "rename /a/x /a/y: operation not permitted", []Denial{{Path: "/a/x"}, {Path: "/a/y"}}},
		{"zsh", "zsh:1: operation not permitted: /x", []Denial{{Process: "zsh", Path: "/x"}}},
		{"git", "error: could not lock config file /Users/u/proj/.git/config: Operation not permitted", []Denial{{Path: "/Users/u/proj/.git/config"}}},
		{"git fatal", "fatal: cannot create directory at '.git/hooks/x': Operation not permitted", []Denial{{Path: ".git/hooks/x"}}},
		{"sandbox-exec's own failure is no denial", "sandbox-exec: sandbox_apply: Operation not permitted", nil},
		{"permission denied is not Seatbelt", "bash: /x: Permission denied", nil},
		{"no path", "ls: fts_read: Operation not permitted", []Denial{{Process: "ls", Path: "fts_read"}}},
		{"noise", "hello\nworld\n", nil},
		{
			"stderr and log lines together, duplicates folded",
			"touch: /x: Operation not permitted\nSandbox: touch(3) deny(1) file-write-create /x\nSandbox: touch(3) deny(1) file-write-create /x\n",
			[]Denial{{Process: "touch", Path: "/x"}, {PID: 3, Process: "touch", Operation: "file-write-create", Path: "/x"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseDenials(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseDenials(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestNewTag(t *testing.T) {
	a, b := NewTag(), NewTag()
	if a == b {
		t.Fatalf("two tags are equal: %s", a)
	}
	for _, tag := range []string{a, b} {
		if !tagPattern().MatchString(tag) || !sameLineTag().MatchString(tag) || !strings.HasPrefix(tag, DefaultTag+"-") {
			t.Errorf("tag %q has the wrong form", tag)
		}
	}
	// The tag survives the round trip through a profile and a log line.
	sb := workspaceSandbox()
	src, err := Profile(sb, ProfileOptions{Tag: a, Canon: fakeCanon})
	if err != nil {
		t.Fatal(err)
	}
	mustRead(t, src, a)
	ds := ParseDenials("Sandbox: cat(1) deny(1) file-read-data /Users/dev/proj/.env\n" + a)
	if len(ds) != 1 || ds[0].Tag != a {
		t.Errorf("tag not parsed back: %+v", ds)
	}
}
