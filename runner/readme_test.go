package runner

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestReadmeListsEveryResultField: the result tables of docs/report.md name every
// field of the JSON report and every failure type, so a harness author
// finds each one documented.
func TestReadmeListsEveryResultField(t *testing.T) {
	data, err := os.ReadFile("../docs/report.md")
	if err != nil {
		t.Fatal(err)
	}
	_, readme, ok := strings.Cut(string(data), "# The run report\n")
	if !ok {
		t.Fatal("docs/report.md has no run report section")
	}
	rt := reflect.TypeOf(Result{})
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && !strings.Contains(readme, "| `"+name+"` |") {
			t.Errorf("the README's result table lacks the field %q", name)
		}
	}
	for _, ft := range FailureTypes() {
		if !strings.Contains(readme, "| `"+string(ft)+"` |") {
			t.Errorf("the README's failure-type table lacks %q", ft)
		}
	}
}
