// Package overlay keeps the copy-on-write workspaces of `cordon run
// --overlay NAME`: per name, an upper and a work directory for overlayfs
// (the host workspace is the read-only lower layer), a manifest of the
// workspace as it was when the overlay started, and a lock held while a
// run or a session uses it. It reads an upper layer back as a list of
// changes (Changes), writes them as a git-style patch (WriteDiff), and
// lands them on the host workspace (Apply): refusing, with the paths, a
// change to a file the host changed since the overlay started and every
// change to a deny or protect path, and writing each file through a
// temporary file in its own directory, synced and renamed into place.
//
// The store lives outside every workspace, per user (Dir), as cordon's
// state directory does. Nothing here mounts anything: spec.Sandbox.Overlay
// carries the layers to the runner, whose mount plan mounts them.
package overlay
