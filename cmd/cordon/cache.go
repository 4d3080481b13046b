package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/spec"
)

func init() {
	register(command{name: "cache", summary: "list (ls) or clear the sandboxes' package caches: cordon cache ls | clear [NAME...]", run: cacheMain})
}

var cacheUsage = "ls [--json] | clear [NAME...]   (caches: " + strings.Join(spec.CacheNames, ", ") + ")"

func cacheMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintf(os.Stderr, "cordon cache: no subcommand; usage: cordon cache %s\n", cacheUsage)
		return exitConfig
	}
	switch args[0] {
	case "ls", "list":
		return cacheList(args[1:])
	case "clear":
		return cacheClear(args[1:])
	case "-h", "--help", "help":
		fmt.Printf("usage: cordon cache %s\n\nThe caches live in %s (CORDON_CACHE_DIR to move them), outside every workspace;\n"+
			"each is mounted read-write at %s/NAME in sandboxes whose config keeps it (caches:).\n", cacheUsage, cordon.CacheDir(), spec.CacheTarget)
		return exitOK
	}
	fmt.Fprintf(os.Stderr, "cordon cache: unknown subcommand %q; usage: cordon cache %s\n", args[0], cacheUsage)
	return exitConfig
}

func cacheList(args []string) int {
	fs := newFlagSet("cache ls", "[--json]")
	jsonOut := fs.Bool("json", false, "print the caches as a JSON list")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	caches, err := cordon.Caches()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon cache ls: %v\n", err)
		return exitSetup
	}
	if *jsonOut {
		if caches == nil {
			caches = []cordon.CacheInfo{}
		}
		data, _ := json.MarshalIndent(caches, "", "  ")
		fmt.Println(string(data))
		return exitOK
	}
	if len(caches) == 0 {
		fmt.Printf("no caches yet (folder: %s)\n", cordon.CacheDir())
		return exitOK
	}
	fmt.Printf("%-6s %10s  %s\n", "NAME", "SIZE", "PATH")
	for _, c := range caches {
		fmt.Printf("%-6s %10s  %s\n", c.Name, humanSize(c.Size), c.Path)
	}
	return exitOK
}

func cacheClear(args []string) int {
	fs := newFlagSet("cache clear", "[NAME...]")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	if err := cordon.ClearCaches(fs.Args()...); err != nil {
		fmt.Fprintf(os.Stderr, "cordon cache clear: %v\n", err)
		if errors.Is(err, cordon.ErrUnknownCache) {
			return exitConfig
		}
		return exitSetup
	}
	what := "every cache"
	if fs.NArg() > 0 {
		what = strings.Join(fs.Args(), ", ")
	}
	fmt.Printf("cleared %s in %s\n", what, cordon.CacheDir())
	return exitOK
}

// humanSize is n bytes as a reader takes it in: 512B, 1.5KiB, 82.1MiB.
func humanSize(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	f, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if f < 1024 {
			break
		}
		f, unit = f/1024, u
	}
	return fmt.Sprintf("%.1f%s", f, unit)
}
