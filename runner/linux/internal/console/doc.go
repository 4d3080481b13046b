// Package console holds the two halves of libcontainer's console socket
// that a cold run's terminal and a session's both use: the socket pair, and
// receiving the pseudo-terminal's master over it.
package console
