// Package darwin is cordon's macOS backend: it turns a derived sandbox into a
// Seatbelt (SBPL) profile and runs commands under `sandbox-exec -p PROFILE`
// behind the same runner.Runner interface as the Linux backend.
//
// Profile works on every OS, so `cordon spec --platform darwin` lets anyone
// review what a Mac would enforce. The profile starts from `(deny default)`
// and allows, in this order: the processes' own needs (fork, exec, signals
// and process information within the sandbox, sysctl reads, a short list of
// Mach services), the system files a process needs to start (dyld and its
// shared cache, /usr/lib, /System/Library, locale, terminfo, a few /dev
// nodes), the system directories and every mount for reading, and the
// read-write mounts for writing. Then it denies, so that the denials win
// (Seatbelt applies the last matching rule): writes to read-only mounts
// nested in writable ones, reads and writes of deny paths, writes of protect
// paths, and any write to the directories above a deny, protect or nested
// read-only path, which stops a rename of a parent from moving a protected
// tree out from under its rule. Finally the network is denied unless it is
// on, Unix sockets included. A sandbox with an allow list may open TCP
// connections to one port of localhost only: that of the HTTP proxy the
// run starts in cordon's process (netguard.Proxy), which decides every
// connection by the allow list; the command gets the proxy variables
// (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY with the run's credentials,
// NODE_USE_ENV_PROXY, JAVA_TOOL_OPTIONS), and a program that ignores them
// cannot connect at all.
//
// Paths are written the way Seatbelt sees them: symbolic links resolved and
// /tmp, /var and /etc spelled /private/tmp, /private/var and /private/etc.
// Deny rules cover both spellings and match case-insensitively, because the
// default macOS filesystem is case-insensitive: a deny of ~/.ssh also stops
// ~/.SSH. Every string is escaped, and a path that cannot be written safely
// (a control character, say) is refused with ErrUnsafeString.
//
// What Seatbelt cannot do is refused with an *UnenforceableError that names
// the feature and says it works on Linux: remapped mounts, a rootfs, and
// memory, pids and cpu limits. When the sandbox allows degradation
// (require_os_sandbox: false) the limits are reported by Unsupported as
// degraded instead and the run's Result lists them in Unenforced.
//
// Each run's profile carries a unique tag on its deny rules, so the denials
// that macOS logs can be tied to the run; ParseDenials reads those log
// lines and the "Operation not permitted" wordings of common tools, and the
// runner turns them into the same sandbox_denied result, with the blocked
// path and what IS allowed, as the Linux backend.
package darwin
