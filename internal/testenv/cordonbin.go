package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cordonPkg is the command the CLI tests run.
const cordonPkg = "github.com/cordon-run/cordon/cmd/cordon"

// staleAfter is how long a cached binary no test has used stays on disk.
const staleAfter = 72 * time.Hour

// Build tags of CordonBinary: as make build links bin/cordon (static, so
// `cordon exec`'s fast path runs before any C library code), with or
// without libseccomp.
const (
	Seccomp   = "seccomp netgo osusergo"
	NoSeccomp = "noseccomp netgo osusergo"
)

var (
	binMu    sync.Mutex
	binPaths = map[string]string{}
	binErrs  = map[string]error{}
)

// CordonBinary returns a cordon binary built from this checkout with tags
// (Seccomp or NoSeccomp), linked statically as make build links it. The
// build is cached across test runs and packages in the user's cache
// directory (cordon-test-bin), under a key made of the Go version and
// environment, the tags and link flags, the compiled form of every package
// the command links (go list -export: the build cache's content address of
// each, so any change to a Go or C source changes it) and the VCS state Go
// stamps into the binary. A binary is therefore never stale; a change
// costs one link (10-20 s), an unchanged tree none.
func CordonBinary(t testing.TB, tags string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if p, ok := binPaths[tags]; ok {
		return p
	}
	if err, ok := binErrs[tags]; ok {
		t.Fatal(err)
	}
	p, err := buildCordon(tags)
	if err != nil {
		binErrs[tags] = err
		t.Fatal(err)
	}
	binPaths[tags] = p
	return p
}

const ldflags = "-linkmode external -extldflags -static"

func buildCordon(tags string) (string, error) {
	key, err := cordonKey(tags)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "cordon-test-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cache directory for the test binary: %w", err)
	}
	// One build per key at a time, across the test binaries go test runs
	// in parallel: the others wait for it and then find the binary.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", fmt.Errorf("cache directory for the test binary: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock the test binary cache: %w", err)
	}
	sweepStale(dir)
	// Each key is a directory holding a binary named cordon, so a test can
	// put it on PATH under the name a user types.
	entry := filepath.Join(dir, key)
	bin := filepath.Join(entry, "cordon")
	if _, err := os.Stat(bin); err == nil {
		now := time.Now()
		_ = os.Chtimes(entry, now, now) // in use: keep it past the sweep
		return bin, nil
	}
	// Build in a directory beside the entry and rename it into place: a
	// test run killed mid-link never leaves a partial binary under the key.
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("cache directory for the test binary: %w", err)
	}
	defer os.RemoveAll(tmp)
	out, err := exec.Command("go", "build", "-tags", tags, "-ldflags", ldflags, "-o", filepath.Join(tmp, "cordon"), cordonPkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build -tags %q %s: %w\n%s", tags, cordonPkg, err, out)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("cache the test binary: %w", err)
	}
	if err := os.Rename(tmp, entry); err != nil {
		return "", fmt.Errorf("cache the test binary: %w", err)
	}
	return bin, nil
}

// cordonKey is the content key of a build of cordonPkg with tags.
func cordonKey(tags string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "tags %q\nldflags %q\n", tags, ldflags)
	for _, c := range [][]string{
		{"go", "env", "GOVERSION", "GOOS", "GOARCH", "GOAMD64", "CC", "CGO_CFLAGS", "CGO_LDFLAGS", "GOFLAGS"},
		{"go", "list", "-deps", "-export", "-tags", tags, "-f", "{{if .Export}}{{.ImportPath}} {{.Export}}{{end}}", cordonPkg},
	} {
		out, err := exec.Command(c[0], c[1:]...).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			return "", fmt.Errorf("%v: %w\n%s", c, err, stderr)
		}
		h.Write(out)
	}
	// What Go stamps into the binary (vcs.revision, vcs.modified) and
	// cordon version prints; outside a git checkout both are empty.
	for _, c := range [][]string{{"git", "rev-parse", "HEAD"}, {"git", "status", "--porcelain"}} {
		out, _ := exec.Command(c[0], c[1:]...).Output()
		h.Write(out)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// sweepStale removes cached binaries no test has used for staleAfter, and
// builds abandoned as long ago.
func sweepStale(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Name() == ".lock" {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleAfter {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}
