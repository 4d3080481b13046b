package cordon

import (
	"os"

	"github.com/sirupsen/logrus"

	"github.com/cordon-run/cordon/internal/cachedir"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// CacheInfo is one of the caller's sandbox caches: its name, host folder
// and size in bytes.
type CacheInfo = cachedir.Info

// ErrUnknownCache matches a cache name that is not one of spec.CacheNames.
var ErrUnknownCache = cachedir.ErrUnknownCache

// CacheDir returns the folder that holds the caller's sandbox caches
// ($CORDON_CACHE_DIR, else the user cache folder's cordon/caches).
func CacheDir() string { return cachedir.Dir() }

// Caches lists the caller's sandbox caches that exist, with their sizes.
func Caches() ([]CacheInfo, error) { return cachedir.List(cachedir.Dir()) }

// ClearCaches removes the named caches of the caller (all when none is
// named); the next run starts them empty.
func ClearCaches(names ...string) error { return cachedir.Clear(cachedir.Dir(), names...) }

// withHostTools adds to the top-level sandbox sb (in place) its caches,
// the caller's toolchains and the files of its CA variables
// (spec.AddHostTools). A cache folder that cannot be made is left out,
// with a warning: the run works, only slower.
func withHostTools(sb *spec.Sandbox) {
	if len(sb.Lineage) > 0 {
		return
	}
	// Seatbelt cannot remap paths: there, everything is at its host path.
	h := spec.HostTools{Home: os.Getenv("HOME"), Lookup: os.LookupEnv, SamePaths: runner.LocalBackend() == runner.BackendSeatbelt}
	if len(sb.Caches) > 0 {
		dir, err := cachedir.Ensure(sb.Caches)
		if err != nil {
			logrus.WithError(err).Warn("the sandbox caches are left out")
		} else if dir != cachedir.Dir() {
			logrus.WithField("dir", dir).Debug("the user cache folder cannot be used: the sandbox caches are in the temporary folder")
		}
		h.CacheDir = dir
	}
	spec.AddHostTools(sb, h)
}
