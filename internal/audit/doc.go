// Package audit writes cordon's audit log: one JSON object per line,
// appended to a file that a project names with `audit: FILE` in its config
// or that a caller names with `--audit FILE`.
//
// Each record is marshalled first and then appended with a single write(2)
// on a descriptor opened with O_APPEND, while an exclusive flock(2) is held
// on that descriptor. Concurrent runs, in one process or in many, therefore
// never interleave their lines, and every line parses on its own.
//
// The log is opened anew for every record, so a *Log holds no descriptor and
// needs no Close. A record that cannot be written is an error that matches
// ErrWrite; cordon treats it as fatal: a run whose start cannot be recorded
// never starts (exit 125).
//
// Records are of four events:
//
//   - "start": a run is about to start (its command, sandbox digest and
//     lineage). Writing it before the command starts is what makes a
//     broken log fail the run closed.
//   - "run": a run ended: its result, its duration.
//   - "denial": a refusal, from the query API (the file tools), a worker
//     derivation, an attachment check or the runner's classification, with
//     the path or worker and the rule.
//   - "serve": `cordon mcp` starts serving a sandbox (written before the
//     first request, so a broken log stops the server at once).
package audit
