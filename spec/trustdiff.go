package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A trusted config's content is kept beside the trust store
// (TrustCopiesDir/DIGEST), so that when the file changes the refusal can
// say so and how much changed: "changed since you trusted it (+2 -1
// lines)". The copies decide nothing (the store's digests do); every
// sandbox denies them with the store.

// TrustCopiesDir is the folder of the trusted configs' contents, beside the
// trust store.
func TrustCopiesDir() string { return TrustStorePath() + ".d" }

// keepTrustedCopy records data, the content of a config just trusted with
// digest, in TrustCopiesDir. A failure only costs the diff's size later.
func keepTrustedCopy(digest string, data []byte) {
	dir := TrustCopiesDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, digest), os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return
	}
	_, _ = f.Write(data)
	_ = f.Close()
}

// untrustedError is the refusal of the discovered config p: a change since
// it was trusted, with the change's size, or a config never trusted.
func untrustedError(p string) error {
	if old := trustedDigestOf(p); old != "" {
		what := ""
		if before, err := readRegular(filepath.Join(TrustCopiesDir(), old), true); err == nil {
			if now, err := readRegular(p, false); err == nil {
				added, removed := lineDiff(string(before), string(now))
				what = fmt.Sprintf(" (+%d -%d lines)", added, removed)
			}
		}
		return fmt.Errorf("%w: %s changed since you trusted it%s, and a sandboxed command could have made the change; "+
			"review it, then run `cordon trust %s` again, or name it with --config", ErrUntrusted, p, what, p)
	}
	return fmt.Errorf("%w: found %s, but a sandboxed command could have written it; "+
		"review it, then run `cordon trust %s` (trust ends when the file changes), or name it with --config", ErrUntrusted, p, p)
}

// trustedDigestOf is the digest of the latest trust record of path, or ""
// when it was never trusted.
func trustedDigestOf(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	lines, err := readTrustStore()
	if err != nil {
		return ""
	}
	digest := ""
	for _, l := range lines {
		if d, p, ok := strings.Cut(l, "\t"); ok && p == abs {
			digest = d
		}
	}
	return digest
}

// maxDiffCells bounds the line diff's table; past it the lines are
// compared as sets.
const maxDiffCells = 4 << 20

// lineDiff counts the lines added to and removed from a to make b (the
// lines outside their longest common subsequence).
func lineDiff(a, b string) (added, removed int) {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(x)*len(y) > maxDiffCells {
		seen := map[string]int{}
		for _, l := range x {
			seen[l]++
		}
		for _, l := range y {
			if seen[l] > 0 {
				seen[l]--
			} else {
				added++
			}
		}
		for _, n := range seen {
			removed += n
		}
		return added, removed
	}
	// prev and cur are rows of the LCS table.
	prev, cur := make([]int, len(y)+1), make([]int, len(y)+1)
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			switch {
			case x[i-1] == y[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	common := prev[len(y)]
	return len(y) - common, len(x) - common
}
