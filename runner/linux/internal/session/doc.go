// Package session is the supervisor's side of a warm session: the fork
// server the backend's built sandbox runs as its PID 1, the shims it forks
// ahead of each exec, each exec's stdio, terminal, cgroup leaf, broker
// refusals and result, and the session's life (idle and maximum lifetime).
// The sandbox itself is built by runner/linux, as a cold run's is (see
// Built), and only runner/linux imports this package.
package session
