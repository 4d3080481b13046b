package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cordon-run/cordon"
)

// sessions holds the warm session of each MCP connection: its first shell
// call starts one sandbox, every later call forks its command from it (a
// millisecond instead of a cold start), and the sandbox ends when the
// connection does. A session that died (its sandbox was killed) is
// replaced at the next call.
type sessions struct {
	mu     sync.Mutex
	byConn map[*mcp.ServerSession]*cordon.Session
	closed bool
}

// sessionFor returns conn's session, starting it when there is none or
// the last one is gone. ok is false when the backend has no sessions
// (macOS): the caller then runs the command cold.
func (s *Server) sessionFor(ctx context.Context, conn *mcp.ServerSession) (sess *cordon.Session, ok bool, err error) {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	if s.sess.closed {
		return nil, true, &cordon.SessionGoneError{Session: "mcp", Reason: "the server is closed"}
	}
	if cur := s.sess.byConn[conn]; cur != nil && cur.Err() == nil {
		return cur, true, nil
	}
	var opts []cordon.SessionOption
	if s.overlay != "" {
		opts = append(opts, cordon.SessionOverlay(s.overlay))
	}
	sess, err = s.sandbox.StartSession(ctx, opts...)
	if errors.Is(err, cordon.ErrSessionsUnsupported) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	if s.sess.byConn == nil {
		s.sess.byConn = map[*mcp.ServerSession]*cordon.Session{}
	}
	if old := s.sess.byConn[conn]; old != nil {
		_ = old.Close()
	}
	s.sess.byConn[conn] = sess
	if conn != nil {
		go func() {
			_ = conn.Wait()
			s.sess.mu.Lock()
			if s.sess.byConn[conn] == sess {
				delete(s.sess.byConn, conn)
			}
			s.sess.mu.Unlock()
			_ = sess.Close()
		}()
	}
	return sess, true, nil
}

// Close ends the warm sessions of every connection. Run calls it when the
// client disconnects; a caller that connects the server itself (MCP())
// calls it when done.
func (s *Server) Close() error {
	s.sess.mu.Lock()
	s.sess.closed = true
	all := s.sess.byConn
	s.sess.byConn = nil
	s.sess.mu.Unlock()
	var errs []error
	for _, sess := range all {
		errs = append(errs, sess.Close())
	}
	return errors.Join(errs...)
}

// filesFor returns the file tools for a call. In overlay mode they work
// on the overlay through the connection's session, started here if the
// shell has not yet: the overlay is mounted only inside a sandbox, and its
// upper layer must not be written on the host while it is. Without
// sessions (a backend that has none has no overlay either) the call is
// refused with what to use. Direct mode uses the sandbox's own tools.
func (s *Server) filesFor(ctx context.Context, call *mcp.CallToolRequest) (*cordon.Files, func(), error) {
	if s.overlay == "" {
		return s.files, func() {}, nil
	}
	var conn *mcp.ServerSession
	if call != nil {
		conn = call.Session
	}
	sess, ok, err := s.sessionFor(ctx, conn)
	if !ok {
		return nil, nil, fmt.Errorf("%w: overlay %s; fix: run without an overlay on this system", ErrOverlayNoSession, s.overlay)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: overlay %s: %w", ErrOverlayNoSession, s.overlay, err)
	}
	return sess.Files()
}
