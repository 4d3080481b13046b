// Package mounts is cordon's mount table and path query API: it answers, for
// a path as a command inside the sandbox would write it, whether the sandbox
// may read or write it and which host file it is, and it provides the file
// tools (Read, Write, List) that an agent uses instead of a shell.
//
// There is one path namespace. The path a command sees inside the sandbox is
// the path this package takes: the workspace is mounted at its own host path,
// a mount's target defaults to its source, and `system: host` exposes the
// host's system directories at their own paths. A relative path is relative
// to the workspace root.
//
// Resolution walks the path one component at a time in the sandbox
// namespace, mapping each prefix to a host path through the longest-prefix
// entry of the table, and follows symbolic links the way the kernel inside
// the sandbox would: an absolute link target starts again at "/" of the
// sandbox, a relative one continues from the link's directory, and ".." after
// a followed link goes to the parent of the link's target. A link therefore
// never reaches a host path that the sandbox does not mount. Deny paths are
// invisible (ErrDenied) and protect paths are never writable (ErrReadOnly),
// whichever mount holds them and whichever link leads to them.
//
// The file tools open files through held directory descriptors, one
// component at a time with O_NOFOLLOW, so a symbolic link swapped in after
// the check cannot redirect them (ErrChanged). Write is atomic: a temporary
// file in the same directory, fsync, then rename over the target.
//
// Every error is a *PathError that matches one of the sentinels in errors.go
// with errors.Is and whose message says what the sandbox does allow, so an
// LLM reading it can choose another path.
package mounts
