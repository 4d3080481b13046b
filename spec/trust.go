package spec

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ErrUntrusted is matched by the error for a discovered project config that
// the user has not trusted: a sandboxed command could have written it, in
// any folder its workspace let it write, to widen the next run.
var ErrUntrusted = errors.New("project config is not trusted")

// TrustStorePath is the file that records trusted project configs:
// $CORDON_TRUST_FILE, else $XDG_CONFIG_HOME/cordon/trusted, else
// ~/.config/cordon/trusted. Every sandbox denies it (GuardTrustStore).
func TrustStorePath() string {
	if p := os.Getenv("CORDON_TRUST_FILE"); p != "" {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	base := os.Getenv("XDG_CONFIG_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "/"
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "cordon", "trusted")
}

// configDigest is the sha256 of a config file's content.
func configDigest(path string) (string, error) {
	data, err := readRegular(path, false)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// Trusted reports whether the config at path, with its current content, was
// trusted with Trust. Any change to the file ends the trust.
func Trusted(path string) (bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	digest, err := configDigest(abs)
	if err != nil {
		return false, err
	}
	data, err := readRegular(TrustStorePath(), true)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("trust store: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		d, p, ok := strings.Cut(sc.Text(), "\t")
		if ok && d == digest && p == abs {
			return true, nil
		}
	}
	return false, sc.Err()
}

// Trust records the config at path, with its current content, as trusted.
func Trust(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if _, err := Load(abs); err != nil {
		return err
	}
	data, err := readRegular(abs, false)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	if ok, err := Trusted(abs); err != nil || ok {
		return err
	}
	store := TrustStorePath()
	if err := os.MkdirAll(filepath.Dir(store), 0o700); err != nil {
		return err
	}
	// Never through a link or into a FIFO: the store's folder may lie in a
	// directory some sandbox could write.
	f, err := os.OpenFile(store, os.O_CREATE|os.O_APPEND|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return fmt.Errorf("trust store %s: %w (it must be a regular file, not a link)", store, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("trust store %s is not a regular file; remove it", store)
	}
	if _, err = fmt.Fprintf(f, "%s\t%s\n", digest, abs); err != nil {
		return err
	}
	keepTrustedCopy(digest, data)
	return nil
}

// DiscoverTrusted finds the project config upwards from dir, as
// FindProjectConfig does, and returns it only if it is trusted. It returns
// "" when there is none, and an error matching ErrUntrusted when the one it
// finds is not trusted.
func DiscoverTrusted(dir string) (string, error) {
	p, err := FindProjectConfig(dir)
	if err != nil || p == "" {
		return p, err
	}
	ok, err := Trusted(p)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", untrustedError(p)
	}
	return p, nil
}

// GuardTrustStore adds the trust store and its copies (TrustCopiesDir) to sb's deny list, so no sandbox can
// trust a config on the user's behalf (a missing store inside a writable
// mount gets a placeholder, which keeps it from being created).
func GuardTrustStore(sb *Sandbox) {
	for _, p := range []string{TrustStorePath(), TrustCopiesDir()} {
		if !slices.ContainsFunc(sb.Deny, func(d string) bool { return within(p, d) }) {
			sb.Deny = append(sb.Deny, p)
		}
	}
}

// GuardControlFiles keeps the files that steer cordon out of the command's
// reach:
//   - the trust store and the audit logs are denied: a command must neither
//     trust a config, nor read, forge or lock (flock) a log;
//   - the config and worker files in use are protected (readable, never
//     writable), so a command cannot widen its own next run.
//
// Paths may be empty or relative (they are made absolute); the lists are
// not duplicated.
func GuardControlFiles(sb *Sandbox, configs, logs []string) {
	GuardTrustStore(sb)
	add := func(list *[]string, p string) {
		if p == "" || strings.HasPrefix(p, "profile:") {
			return
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return
		}
		for _, q := range *list {
			if within(abs, q) {
				return
			}
		}
		*list = append(*list, abs)
	}
	for _, p := range logs {
		add(&sb.Deny, p)
	}
	for _, p := range configs {
		add(&sb.Protect, p)
	}
}

// TrustEntry is one record of the trust store.
type TrustEntry struct {
	// Path is the trusted config's absolute path.
	Path string
	// Digest is the sha256 of its content when it was trusted.
	Digest string
	// State is "trusted" (the file is unchanged), "changed" (so no longer
	// trusted) or "missing".
	State string
}

// TrustedConfigs lists the trust store's records, in the order they were
// made.
func TrustedConfigs() ([]TrustEntry, error) {
	lines, err := readTrustStore()
	if err != nil {
		return nil, err
	}
	var out []TrustEntry
	for _, l := range lines {
		d, p, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		e := TrustEntry{Path: p, Digest: d, State: "trusted"}
		switch now, err := configDigest(p); {
		case errors.Is(err, os.ErrNotExist):
			e.State = "missing"
		case err != nil || now != d:
			e.State = "changed"
		}
		out = append(out, e)
	}
	return out, nil
}

// Revoke removes every trust record of the config at path (whatever its
// content) and returns how many there were.
func Revoke(path string) (int, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, err
	}
	lines, err := readTrustStore()
	if err != nil {
		return 0, err
	}
	var keep, gone []string
	for _, l := range lines {
		if d, p, ok := strings.Cut(l, "\t"); ok && p == abs {
			gone = append(gone, d)
			continue
		}
		keep = append(keep, l)
	}
	n := len(lines) - len(keep)
	if n == 0 {
		return 0, nil
	}
	// Replace the store in one rename, so a crash leaves the old or the
	// new list, never half of one.
	store := TrustStorePath()
	tmp, err := os.CreateTemp(filepath.Dir(store), ".trusted-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	for _, l := range keep {
		if _, err := fmt.Fprintln(tmp, l); err != nil {
			tmp.Close()
			return 0, err
		}
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp.Name(), store); err != nil {
		return 0, err
	}
	// The copies kept for "changed since you trusted it" go with the last
	// record that names their content.
	for _, d := range gone {
		if !slices.ContainsFunc(keep, func(l string) bool { return strings.HasPrefix(l, d+"\t") }) && !strings.ContainsAny(d, "/\x00") && d != "" {
			_ = os.Remove(filepath.Join(TrustCopiesDir(), d))
		}
	}
	return n, nil
}

// readTrustStore returns the store's lines; none when it does not exist.
func readTrustStore() ([]string, error) {
	data, err := readRegular(TrustStorePath(), true)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out, nil
}
