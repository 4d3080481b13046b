// Package sessiond keeps named warm sessions for the cordon CLI: the
// supervisor process (`cordon session serve`, started by `cordon session
// start`) that owns a cordon.Session (which records every exec in the
// audit log) and serves execs on a unix socket in
// cordon's private state directory, the wire format that the C client of
// `cordon exec` speaks (cmd/cordon/execclient_linux.c), and the directory
// of named sessions that `cordon session list` and `stop` read.
//
// The socket lives in DIR/sessions/NAME/sock, where DIR is the runner's
// state directory (mode 0700, owned by the user, and never mountable into
// a sandbox), and the server also refuses peers of another uid. Commands
// inside the session cannot reach it.
package sessiond
