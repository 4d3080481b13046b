// Package mcpserver serves a cordon sandbox to any Model Context Protocol
// client: an LLM agent gets four tools, each confined to the sandbox.
//
//   - read: the text of a file (mounts.Table.Read).
//   - write: create or replace a file, atomically (mounts.Table.Write).
//   - list_files: the paths under a directory that match a glob with "**"
//     (mounts.Table.List).
//   - shell: a command run as /bin/sh -c inside the sandbox (a warm
//     session per connection where the backend has them), with an optional
//     timeout no larger than the sandbox's.
//
// Every tool description states the boundary: the readable and writable
// roots, what is denied or protected, the network and the limits, so the
// model knows what it may do before it tries. Every refusal is a tool error
// (an IsError result, never a protocol failure) whose text is the sandbox's
// typed error: it names the path, the rule and what IS allowed. shell
// returns stdout and stderr (each at most MaxOutputChars characters: the
// head and the tail of a longer stream, the cut marked), the exit code and
// the failure type; when the sandbox caused the failure and its detail
// does not say what is allowed, it appends that. list_files is cut at
// MaxOutputChars characters, and read refuses binary files.
//
// The server is a front end over the root package's sandbox value
// (cordon.Sandbox): its project records each shell run (start and end)
// and each refusal of a file tool in the audit log, and a run whose start
// cannot be recorded is not run.
//
// `cordon mcp` serves it on stdio: New, then Run with any transport of the
// official Go SDK.
package mcpserver
