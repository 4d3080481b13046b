package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// Name is the MCP implementation name the server announces.
const Name = "cordon"

// Options configure a Server.
type Options struct {
	// Sandbox is the effective sandbox every tool is confined to; its
	// project records the shell runs and the file tools' refusals.
	Sandbox *cordon.Sandbox
	// Shell offers the shell tool, which runs commands in the sandbox.
	// Without it the server offers the file tools only.
	Shell bool
	// Version is announced to clients.
	Version string
	// Overlay, when set, runs the shell tool's session in that overlay of
	// the workspace and gives the file tools the overlay's view (default:
	// the sandbox's own workspace_mode: overlay name, if any).
	Overlay string
}

// Server is an MCP server whose tools are confined to one sandbox.
type Server struct {
	sandbox *cordon.Sandbox
	sb      *spec.Sandbox
	files   *cordon.Files
	table   *mounts.Table
	shellOn bool
	overlay string
	mcp     *mcp.Server
	desc    string
	brief   string

	sess sessions
}

// New builds the server and registers its tools: read, write and
// list_files, and shell when opts.Shell is set.
func New(opts Options) (*Server, error) {
	if opts.Sandbox == nil {
		return nil, ErrNoSandbox
	}
	files := opts.Sandbox.Files()
	s := &Server{sandbox: opts.Sandbox, sb: opts.Sandbox.Spec(), files: files, table: files.Table(), shellOn: opts.Shell, overlay: opts.Overlay}
	if s.overlay == "" {
		s.overlay = s.sb.OverlayName
	}
	s.desc = Describe(s.sb, s.table)
	s.brief = Brief(s.sb)
	if s.overlay != "" {
		s.desc += fmt.Sprintf("- overlay: every tool works on the copy-on-write overlay %s of the workspace; nothing reaches the host workspace until the user runs cordon apply %s\n", s.overlay, s.overlay)
		s.brief += fmt.Sprintf(" Every tool works on the copy-on-write overlay %s: nothing reaches the host workspace until the user runs cordon apply.", s.overlay)
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: Name, Version: version}, &mcp.ServerOptions{
		Instructions: "Every tool of this server runs inside one cordon sandbox. " + s.brief,
	})
	s.register()
	return s, nil
}

// MCP returns the underlying SDK server, to connect it to a transport of
// the caller's choice.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one session on t until the client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	defer s.Close()
	return s.mcp.Run(ctx, t)
}

// Description returns the whole statement of the sandbox, which the
// sandbox tool returns.
func (s *Server) Description() string { return s.desc }

// Brief states a sandbox in a few lines, for the server's instructions: the
// workspace, the network and the limits, and where the rest is (the
// sandbox tool). The whole statement (Describe) lists every path, several
// kilobytes that a client would carry in every request.
func Brief(sb *spec.Sandbox) string {
	ws := "there is no workspace: give absolute paths"
	if sb.Root != "" {
		ws = "the workspace is " + sb.Root + " (relative paths are relative to it)"
		if sb.Readonly {
			ws += ", read-only"
		}
	}
	return fmt.Sprintf("In it %s; network: %s; limits: %s. Paths outside what it shows do not exist; some are "+
		"denied (invisible) or protected (read-only). Call the sandbox tool once for every readable, writable, denied "+
		"and protected path before guessing.", ws, networkText(sb.Network), sb.Limits)
}

// Describe states a sandbox for a model: the readable and writable roots,
// what is denied and protected, the network, the limits and the worker
// chain.
func Describe(sb *spec.Sandbox, t *mounts.Table) string {
	var b strings.Builder
	b.WriteString("Sandbox (enforced by cordon; paths are as commands in the sandbox see them):\n")
	fmt.Fprintf(&b, "- readable: %s\n", orNone(t.ReadableRoots()))
	fmt.Fprintf(&b, "- writable: %s\n", orNone(t.WritableRoots()))
	if d := t.Deny(); len(d) > 0 {
		fmt.Fprintf(&b, "- denied (invisible and unwritable): %s\n", strings.Join(d, ", "))
	}
	if p := t.Protect(); len(p) > 0 {
		fmt.Fprintf(&b, "- protected (readable, never writable): %s\n", strings.Join(p, ", "))
	}
	if sb.Root != "" {
		fmt.Fprintf(&b, "- relative paths are relative to the workspace %s\n", sb.Root)
	} else {
		b.WriteString("- there is no workspace: give absolute paths\n")
	}
	fmt.Fprintf(&b, "- network: %s\n", networkText(sb.Network))
	fmt.Fprintf(&b, "- limits: %s\n", sb.Limits)
	if len(sb.Lineage) > 0 {
		fmt.Fprintf(&b, "- worker chain: %s\n", strings.Join(sb.Lineage, " > "))
	}
	return b.String()
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "nothing"
	}
	return strings.Join(list, ", ")
}

func networkText(n spec.Network) string {
	switch {
	case !n.Enabled:
		return "off (network access is disabled for this sandbox)"
	case len(n.Allow) > 0:
		return "only " + strings.Join(n.Allow, ", ")
	}
	return "on"
}

// ReadInput is the read tool's input.
type ReadInput struct {
	Path     string `json:"path" jsonschema:"the file to read: an absolute path, or a path relative to the workspace"`
	MaxChars int    `json:"max_chars,omitempty" jsonschema:"the most characters to return (default 200000)"`
}

// WriteInput is the write tool's input.
type WriteInput struct {
	Path    string `json:"path" jsonschema:"the file to create or replace: an absolute path, or a path relative to the workspace"`
	Content string `json:"content" jsonschema:"the file's new content"`
}

// ListInput is the list_files tool's input.
type ListInput struct {
	Path    string `json:"path,omitempty" jsonschema:"the directory to list (default: the workspace)"`
	Pattern string `json:"pattern,omitempty" jsonschema:"a glob matched against paths relative to the directory: * matches within one level, ** any number of levels (default *)"`
}

func (s *Server) register() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "read",
		Description: "Read a text file inside the sandbox. Long files are cut, and the cut is marked.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.read)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "write",
		Description: "Create or replace a file inside the sandbox with the given content (atomically; missing " +
			"folders are created). Only writable paths can be written (the sandbox tool lists them).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true},
	}, s.write)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "list_files",
		Description: "List the paths under a directory inside the sandbox whose path relative to it matches a " +
			"glob (* within one level, ** across levels). Denied paths are never listed; a long listing is cut and the cut is marked.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.list)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "sandbox",
		Description: "State the sandbox every tool runs in: each readable and writable path, what is denied and protected, the network, the limits.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, s.describe)
	if s.shellOn {
		mcp.AddTool(s.mcp, &mcp.Tool{
			Name:        "shell",
			Description: s.shellDescription(),
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(s.sb.Network.Enabled)},
		}, s.shell)
	}
}

func ptr[T any](v T) *T { return &v }

// DescribeInput is the sandbox tool's input: nothing.
type DescribeInput struct{}

func (s *Server) describe(context.Context, *mcp.CallToolRequest, DescribeInput) (*mcp.CallToolResult, any, error) {
	return textResult(s.desc), nil, nil
}

func (s *Server) read(ctx context.Context, call *mcp.CallToolRequest, in ReadInput) (*mcp.CallToolResult, any, error) {
	files, done, err := s.filesFor(ctx, call)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	text, err := files.Read(in.Path, in.MaxChars)
	if err != nil {
		return nil, nil, err
	}
	return textResult(text), nil, nil
}

func (s *Server) write(ctx context.Context, call *mcp.CallToolRequest, in WriteInput) (*mcp.CallToolResult, any, error) {
	files, done, err := s.filesFor(ctx, call)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	if err := files.Write(in.Path, in.Content); err != nil {
		return nil, nil, err
	}
	return textResult(fmt.Sprintf("wrote %d bytes to %s", len(in.Content), in.Path)), nil, nil
}

func (s *Server) list(ctx context.Context, call *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, any, error) {
	files, done, err := s.filesFor(ctx, call)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	path := in.Path
	if path == "" {
		if s.sb.Root == "" {
			return nil, nil, fmt.Errorf("give a path: %w; readable: %s",
				ErrNoWorkspace, orNone(s.table.ReadableRoots()))
		}
		path = s.sb.Root
	}
	paths, err := files.List(path, in.Pattern)
	if err != nil && !errors.Is(err, mounts.ErrTooMany) {
		return nil, nil, err
	}
	var b strings.Builder
	shown := 0
	for _, p := range paths {
		if b.Len()+len(p)+1 > MaxOutputChars {
			break
		}
		b.WriteString(p)
		b.WriteByte('\n')
		shown++
	}
	if len(paths) == 0 {
		b.WriteString("(no matches)\n")
	}
	if shown < len(paths) {
		fmt.Fprintf(&b, "[cordon: listing cut after %d of %d paths (%d characters at most); narrow the path or the pattern]\n",
			shown, len(paths), MaxOutputChars)
	}
	if err != nil {
		fmt.Fprintf(&b, "[cordon: %v]\n", err)
	}
	return textResult(b.String()), nil, nil
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
