package ociruntime

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/sys/userns"
	"github.com/sirupsen/logrus"

	// The device cgroup rules of a spec need the devices controller's
	// implementation registered, as runc's main does.
	_ "github.com/opencontainers/cgroups/devices"
	// nsenter joins and creates namespaces in C before the Go runtime
	// starts in libcontainer's re-executed init.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

// globals are runc's global flags.
type globals struct {
	root          string
	log           string
	logFormat     string
	systemdCgroup bool
	debug         bool
	rootless      string
	version       string
	// auditDir is cordon's own --audit-dir: run.cordon.audit must name a
	// file below it (auditdir_linux.go).
	auditDir string
}

// cmdFunc runs one command with its own arguments and returns runc's
// exit status for a success; an error is logged and exits 1 (255 for
// exec), as runc's fatal does.
type cmdFunc func(g *globals, args []string) (int, error)

var cmds = map[string]cmdFunc{
	"create":   createCmd,
	"run":      runCmd,
	"start":    startCmd,
	"state":    stateCmd,
	"kill":     killCmd,
	"delete":   deleteCmd,
	"exec":     execCmd,
	"features": featuresCmd,
	"list":     listCmd,
	"ps":       psCmd,
	"pause":    pauseCmd,
	"resume":   resumeCmd,
}

// Main runs the runc command line args (without the program name) and
// returns the process's exit status. version is what --version prints; be
// is cordon's Linux backend, as the root package wires it.
func Main(args []string, version string, be Backend) int {
	backend = be
	g := &globals{version: version}
	fs := flag.NewFlagSet("cordon-oci", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&g.root, "root", defaultRoot(), "root directory for storage of container state (this should be located in tmpfs)")
	fs.StringVar(&g.log, "log", "", "set the log file to write runtime logs to (default is '/dev/stderr')")
	fs.StringVar(&g.logFormat, "log-format", "text", "set the log format ('text' (default), or 'json')")
	fs.BoolVar(&g.systemdCgroup, "systemd-cgroup", false, "enable systemd cgroup support (cgroupsPath of the form slice:prefix:name)")
	fs.BoolVar(&g.debug, "debug", false, "enable debug logging")
	fs.StringVar(&g.rootless, "rootless", "auto", "ignore cgroup permission errors ('true', 'false', or 'auto')")
	fs.StringVar(&g.auditDir, "audit-dir", defaultAuditDir(), "the folder run.cordon.audit logs must lie below (cordon's own flag)")
	var criu string
	fs.StringVar(&criu, "criu", "", "(checkpoint/restore is not supported)")
	var showVersion, help bool
	fs.BoolVar(&showVersion, "version", false, "print the version")
	fs.BoolVar(&showVersion, "v", false, "print the version")
	fs.BoolVar(&help, "help", false, "show help")
	fs.BoolVar(&help, "h", false, "show help")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "cordon-oci: %v\n", err)
		return 1
	}
	if showVersion {
		printVersion(os.Stdout, version)
		return 0
	}
	rest := fs.Args()
	if help || len(rest) == 0 {
		usage(os.Stdout)
		return 0
	}
	if err := setupLogging(g); err != nil {
		fmt.Fprintf(os.Stderr, "cordon-oci: %v\n", err)
		return 1
	}
	if err := reviseRoot(fs, g); err != nil {
		return fatal(err, 1)
	}
	name := rest[0]
	if name == brokerRole {
		return brokerMain(rest[1:])
	}
	c, ok := cmds[name]
	if !ok {
		return fatal(fmt.Errorf("%w: command %q; cordon-oci answers %s", ErrUnsupported, name, strings.Join(cmdNames(), ", ")), 1)
	}
	status, err := c(g, rest[1:])
	if err != nil {
		code := 1
		if name == "exec" {
			code = 255
		}
		return fatal(fmt.Errorf("cordon-oci %s failed: %w", name, err), code)
	}
	return status
}

func cmdNames() []string {
	var names []string
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: cordon-oci [--root DIR] [--log FILE] [--log-format text|json] [--systemd-cgroup] [--audit-dir DIR] COMMAND [FLAGS] ID\n\n"+
		"cordon's OCI runtime, with runc's command line. Commands: %s.\n"+
		"Annotations: %s (see docs/oci.md).\n", strings.Join(cmdNames(), ", "), strings.Join(known, ", "))
}

func printVersion(w io.Writer, version string) {
	fmt.Fprintf(w, "cordon-oci version %s\nspec: %s\n", version, specVersion())
}

// defaultRoot is runc's default state root with cordon-oci's own name:
// /run/cordon-oci, or $XDG_RUNTIME_DIR/cordon-oci for a user (rootless
// podman runs its runtime as root of a user namespace: that is a user too).
func defaultRoot() string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && honorXDG() {
		return filepath.Join(x, "cordon-oci")
	}
	return "/run/cordon-oci"
}

// honorXDG is runc's shouldHonorXDGRuntimeDir.
func honorXDG() bool {
	if os.Geteuid() != 0 {
		return true
	}
	if !userns.RunningInUserNS() {
		return false
	}
	u, ok := os.LookupEnv("USER")
	return !ok || u != "root"
}

// reviseRoot makes --root absolute and refuses /, as runc does.
func reviseRoot(fs *flag.FlagSet, g *globals) error {
	root, err := filepath.Abs(g.root)
	if err != nil {
		return fmt.Errorf("--root %q: %w", g.root, err)
	}
	if root == "/" {
		return fmt.Errorf("%w: option --root argument should not be set to /", ErrUsage)
	}
	g.root = root
	if !filepath.IsAbs(g.auditDir) {
		// Not made absolute here: a path is resolved as the kernel
		// resolves it, never cleaned first.
		return fmt.Errorf("%w: --audit-dir %q is not an absolute path; fix: give the audit folder's absolute path: /var/log/cordon-oci", ErrUsage, g.auditDir)
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "root" })
	if !set && honorXDG() && os.Getenv("XDG_RUNTIME_DIR") != "" {
		if err := os.MkdirAll(root, 0o700); err != nil {
			return fmt.Errorf("the state root %s must be writable by the user: %w", root, err)
		}
		return os.Chmod(root, os.FileMode(0o700)|os.ModeSticky)
	}
	return nil
}

// setupLogging configures logrus for the runtime log (--log,
// --log-format), where containerd and conmon read runc's errors.
func setupLogging(g *globals) error {
	logrus.SetOutput(os.Stderr)
	logrus.SetLevel(logrus.InfoLevel)
	if g.debug {
		logrus.SetLevel(logrus.DebugLevel)
	}
	switch g.logFormat {
	case "", "text":
	case "json":
		logrus.SetFormatter(new(logrus.JSONFormatter))
	default:
		return fmt.Errorf("%w: invalid log-format %q; write text or json", ErrUsage, g.logFormat)
	}
	if g.log != "" {
		f, err := os.OpenFile(g.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_SYNC, 0o644)
		if err != nil {
			return fmt.Errorf("open the log %s: %w", g.log, err)
		}
		logrus.SetOutput(f)
	}
	return nil
}

// fatal logs err to the runtime log, and to stderr too when the log is a
// file, and returns code, as runc's fatalWithCode does.
func fatal(err error, code int) int {
	logrus.Error(err)
	if l, ok := logrus.StandardLogger().Out.(*os.File); !ok || l.Fd() != os.Stderr.Fd() {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// newFlags is a command's flag set; its errors are returned, not printed.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseArgs parses a command's flags and checks the number of the
// remaining arguments: exactly n, or at least n when atLeast.
func parseArgs(fs *flag.FlagSet, args []string, n int, atLeast bool) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUsage, fs.Name(), err)
	}
	rest := fs.Args()
	if len(rest) < n || (!atLeast && len(rest) != n) {
		want := "exactly"
		if atLeast {
			want = "a minimum of"
		}
		return nil, fmt.Errorf("%w: %q requires %s %d argument(s), got %d", ErrUsage, fs.Name(), want, n, len(rest))
	}
	if n > 0 && rest[0] == "" {
		return nil, errors.New("container id cannot be empty")
	}
	return rest, nil
}
