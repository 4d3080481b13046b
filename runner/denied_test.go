package runner

import (
	"fmt"
	"testing"
)

// TestListDenials: a result lists each refused call once, in order, at
// most MaxListedDenials of them, and counts every call.
func TestListDenials(t *testing.T) {
	a := DeniedCall{Op: "openat", Path: "/w/.git/config", Rule: "protect /w/.git/config"}
	b := DeniedCall{Op: "unlinkat", Path: "/w/.git/config", Rule: "protect /w/.git/config"}
	var many []DeniedCall
	for i := 0; i < 50; i++ {
		many = append(many, DeniedCall{Op: "mkdirat", Path: fmt.Sprintf("/w/.git/hooks/d%d", i), Rule: "protect /w/.git/hooks"})
	}
	for _, tc := range []struct {
		name   string
		in     []DeniedCall
		listed int
		count  int
		first  DeniedCall
	}{
		{"none", nil, 0, 0, DeniedCall{}},
		{"one", []DeniedCall{a}, 1, 1, a},
		{"repeats listed once", []DeniedCall{a, a, b, a}, 2, 4, a},
		{"capped", many, MaxListedDenials, 50, many[0]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := ListDenials(tc.in)
			if len(got) != tc.listed || n != tc.count || (len(got) > 0 && got[0] != tc.first) {
				t.Fatalf("listDenials = %v (%d), want %d listed of %d, first %v", got, n, tc.listed, tc.count, tc.first)
			}
		})
	}
}
