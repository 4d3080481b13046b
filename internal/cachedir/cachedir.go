// Package cachedir keeps the per-user folders that hold the sandboxes'
// package caches (spec.CacheNames): where they live, making them, listing
// them with their sizes and clearing them. It never touches the host's own
// caches (~/.cache/go-build, ~/.npm, …): each cache is a folder of its own
// below Dir.
package cachedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/cordon-run/cordon/spec"
)

// ErrUnknownCache is returned for a cache name that is not one of
// spec.CacheNames.
var ErrUnknownCache = errors.New("unknown cache")

// ErrNotOwned is returned for a cache folder that is not a directory owned
// by the caller and writable only by it: another user could have planted
// it, and what a sandbox builds from it would be theirs.
var ErrNotOwned = errors.New("cache folder not owned by the caller")

// Dir returns the folder that holds the caches of the caller:
// $CORDON_CACHE_DIR when set, else the user cache folder ($XDG_CACHE_HOME,
// or ~/.cache) /cordon/caches. It is not created.
func Dir() string {
	if d := os.Getenv("CORDON_CACHE_DIR"); filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	if base, err := os.UserCacheDir(); err == nil && filepath.IsAbs(base) {
		return filepath.Join(base, "cordon", "caches")
	}
	return fallback()
}

// fallback is the folder used when the user cache folder cannot be used
// (no $HOME, or one the caller cannot write, as under setpriv).
func fallback() string {
	return filepath.Join(os.TempDir(), "cordon-caches-"+strconv.Itoa(os.Geteuid()))
}

// Ensure makes the folder of each named cache below Dir (mode 0700) and
// returns Dir. When Dir cannot be made or is not the caller's own, the
// caches go to a private folder below the temporary folder instead; the
// error says why neither could be used.
func Ensure(names []string) (string, error) {
	dir := Dir()
	err := ensureIn(dir, names)
	if err == nil {
		return dir, nil
	}
	if os.Getenv("CORDON_CACHE_DIR") != "" {
		return "", err
	}
	fb := fallback()
	if ferr := ensureIn(fb, names); ferr != nil {
		return "", errors.Join(err, ferr)
	}
	return fb, nil
}

func ensureIn(dir string, names []string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot make the cache folder %s: %w; fix: set CORDON_CACHE_DIR to a folder of yours, or caches: false", dir, err)
	}
	if err := owned(dir); err != nil {
		return err
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("cannot make the cache folder %s: %w", p, err)
		}
		if err := owned(p); err != nil {
			return err
		}
	}
	return nil
}

// owned checks that p is a directory (not a symlink) owned by the caller
// and writable by no one else.
func owned(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("cache folder %s: %w", p, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s must be a directory owned by uid %d and writable only by it; fix: remove it, or set CORDON_CACHE_DIR to a folder of yours", ErrNotOwned, p, os.Geteuid())
	}
	return nil
}

// Info is one cache as `cordon cache ls` lists it.
type Info struct {
	// Name is the cache's name (spec.CacheNames).
	Name string `json:"name"`
	// Path is its host folder.
	Path string `json:"path"`
	// Size is the bytes of the files in it.
	Size int64 `json:"size"`
}

// List returns the caches that exist below dir, in spec.CacheNames order,
// with their sizes.
func List(dir string) ([]Info, error) {
	var out []Info
	for _, n := range spec.CacheNames {
		p := filepath.Join(dir, n)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cache %s: %w", n, err)
		}
		if !fi.IsDir() {
			continue
		}
		var size int64
		// WalkDir does not follow symlinks: a link a sandbox left points
		// nowhere this sum goes.
		_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if i, err := d.Info(); err == nil {
					size += i.Size()
				}
			}
			return nil
		})
		out = append(out, Info{Name: n, Path: p, Size: size})
	}
	return out, nil
}

// Clear removes the named caches below dir (every cache when names is
// empty); a cache that does not exist is not an error. What a sandbox left
// there is removed inside the folder as an os.Root holds it, so a symlink
// it planted leads nowhere outside; Go's read-only module folders are made
// writable first.
func Clear(dir string, names ...string) error {
	if len(names) == 0 {
		names = spec.CacheNames
	}
	for _, n := range names {
		if !slices.Contains(spec.CacheNames, n) {
			return fmt.Errorf("%w %q; the caches are: %v", ErrUnknownCache, n, spec.CacheNames)
		}
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := owned(dir); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("open the cache folder: %w", err)
	}
	defer root.Close()
	var errs []error
	for _, n := range names {
		fi, err := root.Lstat(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && fi.IsDir() {
			_ = fs.WalkDir(root.FS(), n, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					_ = root.Chmod(p, 0o700)
				}
				return nil
			})
		}
		if err := root.RemoveAll(n); err != nil {
			errs = append(errs, fmt.Errorf("clear cache %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}
