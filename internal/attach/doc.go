// Package attach decides which files a parent sandbox may pass to a child
// worker, and how the child sees them.
//
// An attachment is a file the parent can read. Resolve checks each path
// through the parent's mount table (the same query API the file tools and
// `cordon check` use), so a path outside the parent's sandbox, on its deny
// list, refused by a mount's suffix or size rule, or leading through a
// symbolic link to any of those, is refused with a message that lists what
// the parent can read. A Policy caps the number of attachments, their total
// size and, optionally, their suffixes.
//
// Each accepted attachment becomes a read-only spec.Mount whose Source is
// the resolved host file and whose Target is the file's sandbox path in the
// parent, so the child sees it where the parent did. Apply adds the mounts
// to the child's sandbox and checks, through the child's own mount table,
// that the child can read each one; an attachment the child's deny list
// hides is refused rather than mounted over the mask.
//
// The check and the mount are two steps: the file is resolved when Resolve
// runs and bound when the sandbox starts. Both happen before the child's
// first process exists, but a process that can write the parent's
// directories at that moment could swap the file; attach from directories
// that no running sandbox writes.
package attach
