package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/internal/overlay"
)

func init() {
	register(command{name: "diff", summary: "show what an overlay changes in the workspace, as a git-style patch", run: diffMain})
	register(command{name: "apply", summary: "land an overlay's changes on the workspace (refusing conflicts and protected paths)", run: applyMain})
	register(command{name: "discard", summary: "remove an overlay and all it holds; the workspace is not touched", run: discardMain})
	register(command{name: "overlays", summary: "list the overlays: name, workspace, age, size, changed files", run: overlaysMain})
}

// overlayError prints err and returns its exit code: 1 for a refusal
// (conflict, protected path, in use), 2 for a bad name or a missing
// overlay, 125 for anything else.
func overlayError(err error) int {
	fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
	switch {
	case errors.Is(err, overlay.ErrConflict), errors.Is(err, overlay.ErrProtected), errors.Is(err, overlay.ErrInUse):
		return exitDenied
	case errors.Is(err, overlay.ErrName), errors.Is(err, overlay.ErrNotFound), errors.Is(err, overlay.ErrWorkspace):
		return exitConfig
	}
	return exitSetup
}

func getOverlay(name string) (*overlay.Overlay, error) {
	st, err := cordon.OverlayStore()
	if err != nil {
		return nil, err
	}
	return st.Get(name)
}

func oneName(cmd string, args []string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("cordon %s: give one overlay name (cordon overlays lists them)", cmd)
	}
	return args[0], nil
}

func diffMain(args []string) int {
	fs := newFlagSet("diff", "[--stat] [--json] NAME")
	stat := fs.Bool("stat", false, "print a summary per file (lines added and removed) instead of the patch")
	jsonOut := fs.Bool("json", false, "print the changes as JSON (path, kind, modes, binary, line counts)")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	name, err := oneName("diff", fs.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitConfig
	}
	o, err := getOverlay(name)
	if err != nil {
		return overlayError(err)
	}
	cs, err := o.Changes()
	if err != nil {
		return overlayError(err)
	}
	if err := o.WriteDiff(os.Stdout, cs, !*stat && !*jsonOut); err != nil {
		return overlayError(err)
	}
	switch {
	case *jsonOut:
		if cs == nil {
			cs = []overlay.Change{}
		}
		out := struct {
			Overlay   string           `json:"overlay"`
			Workspace string           `json:"workspace"`
			Changes   []overlay.Change `json:"changes"`
		}{o.Name, o.Workspace, cs}
		data, _ := json.MarshalIndent(out, "", "  ")
		fmt.Println(string(data))
	case *stat:
		printStat(cs)
	}
	return exitOK
}

func printStat(cs []overlay.Change) {
	files, ins, del := 0, 0, 0
	for _, c := range cs {
		if c.Dir() {
			continue
		}
		files++
		ins += c.Insertions
		del += c.Deletions
		switch {
		case c.Binary:
			fmt.Printf(" %s | Bin (%s)\n", c.Path, c.Kind)
		default:
			fmt.Printf(" %s | %d +%d -%d (%s)\n", c.Path, c.Insertions+c.Deletions, c.Insertions, c.Deletions, c.Kind)
		}
	}
	fmt.Printf(" %d files changed, %d insertions(+), %d deletions(-)\n", files, ins, del)
}

func applyMain(args []string) int {
	fs := newFlagSet("apply", "[--config F] [--profile P] [--allow-protected] NAME")
	var sf sandboxFlags
	var of overrideFlags
	sf.register(fs)
	of.register(fs)
	allow := fs.Bool("allow-protected", false, "also land changes to protect paths (hooks, git config, start-up files); never deny paths")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	name, err := oneName("apply", fs.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitConfig
	}
	_, s, err := open(&sf, &of, nil, cordon.FrontEndCLI)
	if err != nil {
		return configError(os.Stderr, err)
	}
	cs, err := s.ApplyOverlay(name, *allow)
	if err != nil {
		return overlayError(err)
	}
	// One write for the list, not one per file.
	w := bufio.NewWriter(os.Stderr)
	n := 0
	for _, c := range cs {
		if !c.Dir() {
			n++
			fmt.Fprintf(w, "cordon: applied %s %s\n", c.Kind, c.Path)
		}
	}
	fmt.Fprintf(w, "cordon: overlay %s: %d files applied\n", name, n)
	_ = w.Flush()
	return exitOK
}

func discardMain(args []string) int {
	fs := newFlagSet("discard", "NAME")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	name, err := oneName("discard", fs.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitConfig
	}
	st, err := cordon.OverlayStore()
	if err != nil {
		return overlayError(err)
	}
	if err := st.Discard(name); err != nil {
		return overlayError(err)
	}
	return exitOK
}

func overlaysMain(args []string) int {
	fs := newFlagSet("overlays", "[--json]")
	jsonOut := fs.Bool("json", false, "print the list as JSON")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	st, err := cordon.OverlayStore()
	if err != nil {
		return overlayError(err)
	}
	list, err := st.List()
	if err != nil {
		return overlayError(err)
	}
	type row struct {
		Name      string    `json:"name"`
		Workspace string    `json:"workspace"`
		Created   time.Time `json:"created"`
		Size      int64     `json:"size"`
		Changed   int       `json:"changed_files"`
	}
	rows := []row{}
	for _, o := range list {
		n := 0
		if cs, err := o.Changes(); err == nil {
			for _, c := range cs {
				if !c.Dir() {
					n++
				}
			}
		}
		rows = append(rows, row{o.Name, o.Workspace, o.Created, o.Size(), n})
	}
	if *jsonOut {
		data, _ := json.MarshalIndent(rows, "", "  ")
		fmt.Println(string(data))
		return exitOK
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWORKSPACE\tAGE\tSIZE\tCHANGED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", r.Name, r.Workspace, time.Since(r.Created).Round(time.Second), r.Size, r.Changed)
	}
	tw.Flush()
	return exitOK
}
