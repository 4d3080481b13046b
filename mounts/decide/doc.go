// Package decide holds the decisions on what the sandbox may write that a
// path pattern alone cannot make: the shape of a directory git takes for a
// repository (HEAD, objects and refs), the content of a git config the
// sandbox gives a new repository, git's templates under a protected
// hooks directory, and the places a ".git" file's gitdir and a config's
// core.worktree send git to (decided on the writer's resolution of them
// as the kernel's, never a lexical one). Every writer asks it: the Linux broker for the
// sandbox's processes, the file tools (mounts' Table.Write, behind the MCP
// write tool and the Go API's Files) and `cordon check` through them, so
// that no way in plants what another refuses.
//
// The package decides and never acts: a writer hands it the directory a
// name is made in (a Dir, which it implements with the directory
// descriptor it holds), and gets a Verdict back. The one side effect a
// rule has, a config taken into a repository shape being rewritten
// through a copy the sandbox never held, is returned in the Verdict for
// the writer to perform with its own descriptors.
//
// It is named for what it does (it decides) rather than "protect": the
// protect list is one of its inputs (Rules.Refuse), and most of what it
// decides is what no pattern names.
package decide
