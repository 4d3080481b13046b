// Package xlock is the lock every cordon broker (and every file tool)
// takes before it decides and acts on a rule whose verdict depends on
// what else a directory holds: the repository shape (HEAD, objects and
// refs in one directory make a repository git takes), the config that
// completing that shape checks and rewrites, and the tree a renamed
// directory carries. Each broker already serializes these decisions among
// its own threads; xlock serializes them among processes: several
// sandboxes (two runs, a session beside a run, two MCP servers) on one
// workspace, root and other users alike.
//
// # Why flock(2) on the directory itself
//
// The lock is flock(2) LOCK_EX on the directory the decision is about,
// taken through a descriptor of that directory (any descriptor, O_PATH
// included: Lock opens "." through it for reading).
//
//   - Every piece of a repository shape is a name in ONE directory, so the
//     directory's inode is the one thing every broker deciding on that
//     shape has in common, whatever its mount root, its mount namespace or
//     the path it reached the directory by: flock is held by the inode,
//     not the path or the mount.
//   - No shared state directory is needed, so nothing has to be made
//     writable for every user (where another user could pre-create, swap
//     or hold a lock file), and root and rootless brokers of one workspace
//     meet on the same lock as long as each can open the directory for
//     reading, which a broker acting in it can (a directory the broker
//     cannot read is refused: fail closed).
//   - The kernel drops the lock with the last descriptor: a broker that
//     dies holds nothing.
//
// # Waiting, and who else can hold it
//
// Any process that can open the directory can flock it, including a
// command inside a sandbox (flock is no call the broker sees). Lock
// therefore never waits forever: it tries without blocking and backs off,
// and after Wait it fails with ErrBusy, which the broker turns into a
// refusal of the call (EBUSY to the caller, a denial with Rule Busy and
// the path recorded). A process that holds the lock on purpose can only
// make calls in that directory fail, never make one succeed: it is a
// denial of service of the sandboxes on that workspace, which its owner
// could do anyway by deleting their files.
//
// # What a caller must still do
//
// A lock held on a directory does not stop it being renamed by a process
// that does not take it. The broker therefore takes the lock of the
// directories a rename moves (see internal/broker's tree walk), and after
// taking a lock it reads the directory's path again and decides on that.
package xlock
