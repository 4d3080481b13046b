package overlay

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// context is the lines of context around each hunk, as git's default.
const context = 3

// Side reads one side of a change: the host's (old) or the overlay's (new).
func (o *Overlay) side(p string, upper bool) ([]byte, error) {
	root := o.Workspace
	if upper {
		root = o.Upper()
	}
	full := filepath.Join(root, p)
	fi, err := os.Lstat(full)
	if err != nil {
		return nil, err
	}
	return readEntry(full, fi)
}

// WriteDiff writes changes as a git-style patch (`git apply` takes it
// from the workspace; binary files are named, not carried) and fills each
// change's Insertions, Deletions and Binary. With patch false it only
// counts (for --stat and --json).
func (o *Overlay) WriteDiff(w io.Writer, changes []Change, patch bool) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if patch {
		o.writeGitSummary(bw, changes)
	}
	for i := range changes {
		c := &changes[i]
		if c.Dir() || (patch && inGitDir(c.Path)) {
			continue
		}
		if err := o.diffOne(bw, c, patch); err != nil {
			return fmt.Errorf("overlay %s: diff %s: %w", o.Name, c.Path, err)
		}
	}
	return bw.Flush()
}

func (o *Overlay) diffOne(w *bufio.Writer, c *Change, patch bool) error {
	var old, cur []byte
	var err error
	if c.Kind != Added {
		if old, err = o.side(c.Path, false); err != nil {
			return err
		}
	}
	if c.Kind != Deleted {
		if cur, err = o.side(c.Path, true); err != nil {
			return err
		}
	}
	c.Binary = binary(old) || binary(cur)
	var edits []edit
	if !c.Binary {
		edits = lineDiff(splitLines(old), splitLines(cur))
		for _, e := range edits {
			switch e.op {
			case '+':
				c.Insertions++
			case '-':
				c.Deletions++
			}
		}
	}
	if !patch {
		return nil
	}
	a, b := "a/"+c.Path, "b/"+c.Path
	fmt.Fprintf(w, "diff --git %s %s\n", a, b)
	switch {
	case c.Kind == Added:
		fmt.Fprintf(w, "new file mode %o\n", c.NewMode)
		a = "/dev/null"
	case c.Kind == Deleted:
		fmt.Fprintf(w, "deleted file mode %o\n", c.OldMode)
		b = "/dev/null"
	case c.OldMode != c.NewMode:
		fmt.Fprintf(w, "old mode %o\nnew mode %o\n", c.OldMode, c.NewMode)
	}
	if bytes.Equal(old, cur) && c.Kind == Modified {
		return nil
	}
	fmt.Fprintf(w, "index %s..%s", blobID(old, c.Kind != Added), blobID(cur, c.Kind != Deleted))
	if c.Kind == Modified && c.OldMode == c.NewMode {
		fmt.Fprintf(w, " %o", c.NewMode)
	}
	w.WriteByte('\n')
	if c.Binary {
		writeBinary(w, cur)
		return nil
	}
	if len(old) == 0 && len(cur) == 0 || c.Insertions+c.Deletions == 0 {
		return nil
	}
	fmt.Fprintf(w, "--- %s\n+++ %s\n", a, b)
	writeHunks(w, edits)
	return nil
}

// inGitDir reports whether p is in the workspace's own .git directory,
// which `git apply` does not patch: the patch leaves it out and a summary
// before it names what changes there.
func inGitDir(p string) bool { return p == ".git" || strings.HasPrefix(p, ".git/") }

// writeGitSummary writes, as lines `git apply` skips, what the overlay
// changes in the workspace's .git: the refs that moved and the count of
// the rest (new objects above all). cordon apply lands them as files.
func (o *Overlay) writeGitSummary(w *bufio.Writer, changes []Change) {
	objects, other := 0, 0
	var refs []string
	for _, c := range changes {
		switch {
		case !inGitDir(c.Path) || c.Dir():
		case strings.HasPrefix(c.Path, ".git/objects/") && c.Kind == Added:
			objects++
		case c.Path == ".git/HEAD" || strings.HasPrefix(c.Path, ".git/refs/"):
			old, _ := o.side(c.Path, false)
			cur, _ := o.side(c.Path, true)
			refs = append(refs, fmt.Sprintf("%s %s -> %s", strings.TrimPrefix(c.Path, ".git/"), short(old), short(cur)))
		default:
			other++
		}
	}
	if objects+other+len(refs) == 0 {
		return
	}
	fmt.Fprintf(w, "# cordon overlay %s of %s changes .git too (not in this patch; cordon apply %s lands it):\n", o.Name, o.Workspace, o.Name)
	for _, r := range refs {
		fmt.Fprintf(w, "#   %s\n", r)
	}
	fmt.Fprintf(w, "#   %d new objects, %d other files (index, logs, ...)\n", objects, other)
}

func short(ref []byte) string {
	s := strings.TrimSpace(string(ref))
	if s == "" {
		return "(none)"
	}
	if len(s) == 40 {
		return s[:12]
	}
	return s
}

// binary is git's test: a NUL byte in the first 8000 bytes.
func binary(b []byte) bool {
	if len(b) > 8000 {
		b = b[:8000]
	}
	return bytes.IndexByte(b, 0) >= 0
}

// splitLines splits b into lines, each with its newline; the last one
// lacks it when b does not end with one.
func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// writeHunks writes edits as unified hunks with context lines of
// context.
func writeHunks(w *bufio.Writer, edits []edit) {
	// Positions (1-based line numbers) of each edit on both sides.
	for i := 0; i < len(edits); {
		// Find the next change.
		for i < len(edits) && edits[i].op == ' ' {
			i++
		}
		if i == len(edits) {
			return
		}
		start := max(0, i-context)
		end := i
		for end < len(edits) {
			if edits[end].op != ' ' {
				end++
				continue
			}
			// A run of kept lines longer than 2*context ends the hunk.
			j := end
			for j < len(edits) && edits[j].op == ' ' {
				j++
			}
			if j == len(edits) || j-end > 2*context {
				end = min(j, end+context)
				break
			}
			end = j
		}
		writeHunk(w, edits, start, end)
		i = end
	}
}

func writeHunk(w *bufio.Writer, edits []edit, start, end int) {
	aLine, bLine := 1, 1
	for _, e := range edits[:start] {
		if e.op != '+' {
			aLine++
		}
		if e.op != '-' {
			bLine++
		}
	}
	aN, bN := 0, 0
	for _, e := range edits[start:end] {
		if e.op != '+' {
			aN++
		}
		if e.op != '-' {
			bN++
		}
	}
	if aN == 0 {
		aLine--
	}
	if bN == 0 {
		bLine--
	}
	fmt.Fprintf(w, "@@ -%s +%s @@\n", rng(aLine, aN), rng(bLine, bN))
	for _, e := range edits[start:end] {
		w.WriteByte(e.op)
		w.WriteString(e.line)
		if !strings.HasSuffix(e.line, "\n") {
			w.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

func rng(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
