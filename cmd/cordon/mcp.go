package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/cmd/cordon/internal/mcpserver"
)

func init() {
	register(command{name: "mcp", summary: "serve the sandbox's tools (read, write, list_files, shell) to an MCP client on stdio", run: mcpMain})
}

const mcpUsage = "[--config F] [--profile P] [--worker W]... [--allow HOST]... [-e NAME[=VALUE]]... [--mount SRC[:DST][:ro]]... [--attach PATH]... [--audit FILE] [--overlay NAME]"

// mcpMain serves one MCP session on stdin and stdout until the client
// closes stdin. Nothing but the protocol may be written to stdout: logs
// and errors go to stderr.
func mcpMain(args []string) int {
	fs := newFlagSet("mcp", mcpUsage)
	var sf sandboxFlags
	var of overrideFlags
	var ag agentFlags
	sf.register(fs)
	of.register(fs)
	ag.register(fs)
	overlayName := fs.String("overlay", "", "serve the copy-on-write overlay `NAME` of the workspace: the shell and the file tools write it, not the workspace (cordon diff/apply/discard NAME)")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "cordon mcp: unexpected arguments %q; usage: cordon mcp %s\n", fs.Args(), mcpUsage)
		return exitConfig
	}
	s, code := ag.prepare(&sf, &of, cordon.FrontEndMCP)
	if code != exitOK {
		return code
	}
	if name := *overlayName; name != "" || s.Spec().OverlayName != "" {
		if name == "" {
			name = s.Spec().OverlayName
		}
		if err := cordon.CheckOverlay(name); err != nil {
			fmt.Fprintf(os.Stderr, "cordon: not serving: %v\n", err)
			return exitConfig
		}
	}
	if err := cordon.CheckBackend(); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	// Fail closed before serving: a log that cannot take this record could
	// not take the runs either.
	if err := s.Serving(); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: not serving: %v\n", err)
		return exitSetup
	}
	srv, err := mcpserver.New(mcpserver.Options{Sandbox: s, Shell: true, Version: cordon.Version(), Overlay: *overlayName})
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err = srv.Run(ctx, &mcp.StdioTransport{})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		fmt.Fprintf(os.Stderr, "cordon mcp: %v\n", err)
		return 1
	}
	return exitOK
}
