package cordon_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsLinks: every relative link in the README and in docs/ names a
// file that exists, every page in docs/ is linked from the README, and
// the README stays a front door (at most 400 lines).
func TestDocsLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#:]+\.md)(#[^)]*)?\)`)
	pages, err := filepath.Glob("docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs pages: %v", err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 400 {
		t.Errorf("README.md has %d lines; topics belong in docs/", n)
	}
	for _, f := range append([]string{"README.md"}, pages...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), m[1])); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, m[1])
			}
		}
	}
	for _, p := range pages {
		if !strings.Contains(string(readme), "]("+p+")") {
			t.Errorf("README.md does not link %s", p)
		}
	}
}
