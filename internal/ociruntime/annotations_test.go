package ociruntime_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/ociruntime"
	"github.com/cordon-run/cordon/spec"
)

func TestParseBoundary(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		a       map[string]string
		want    ociruntime.Boundary
		wantErr []string // fragments; nil: no error
		config  bool     // the error is the config's own (spec.ErrInvalidConfig)
	}{
		{name: "none", a: map[string]string{"io.kubernetes.x": "y"}},
		{name: "deny and protect", a: map[string]string{"run.cordon.deny": "/etc/secret, /keys/", "run.cordon.protect": "/etc/app.conf"},
			want: ociruntime.Boundary{Deny: []string{"/etc/secret", "/keys"}, Protect: []string{"/etc/app.conf"}}},
		{name: "duplicates merged", a: map[string]string{"run.cordon.deny": "/a,/a"}, want: ociruntime.Boundary{Deny: []string{"/a"}}},
		{name: "allow normalized", a: map[string]string{"run.cordon.network.allow": "GitHub.com:443,*.pypi.org"},
			want: ociruntime.Boundary{Allow: []string{"github.com:443", "*.pypi.org"}}},
		{name: "audit", a: map[string]string{"run.cordon.audit": "/var/log/a.jsonl"}, want: ociruntime.Boundary{Audit: "/var/log/a.jsonl"}},
		{name: "relative", a: map[string]string{"run.cordon.deny": "etc/x"}, wantErr: []string{"run.cordon.deny", "not an absolute container path"}},
		{name: "empty entry", a: map[string]string{"run.cordon.protect": "/a,,/b"}, wantErr: []string{"run.cordon.protect", "empty entry"}},
		{name: "root", a: map[string]string{"run.cordon.deny": "/"}, wantErr: []string{"whole container"}},
		{name: "dot-dot", a: map[string]string{"run.cordon.deny": "/etc/../../x"}, wantErr: []string{".. component"}},
		{name: "pattern", a: map[string]string{"run.cordon.deny": "/**/.env"}, wantErr: []string{"is a pattern"}},
		{name: "home", a: map[string]string{"run.cordon.deny": "~/x"}, wantErr: []string{"not an absolute container path"}},
		{name: "unknown key", a: map[string]string{"run.cordon.denny": "/x"}, wantErr: []string{"run.cordon.denny", "not an annotation cordon-oci knows", "run.cordon.deny"}},
		{name: "bad host", a: map[string]string{"run.cordon.network.allow": "http://x/y"}, wantErr: []string{"annotation run.cordon.network.allow", "host[:port]"}, config: true},
		{name: "empty deny", a: map[string]string{"run.cordon.deny": ""}, wantErr: []string{"run.cordon.deny", "is empty"}},
		{name: "blank protect", a: map[string]string{"run.cordon.protect": " "}, wantErr: []string{"run.cordon.protect", "is empty"}},
		{name: "key in another case", a: map[string]string{"Run.Cordon.protect": "/etc/app.conf"}, wantErr: []string{"Run.Cordon.protect", "not an annotation cordon-oci knows"}},
		{name: "empty allow", a: map[string]string{"run.cordon.network.allow": ""}, wantErr: []string{"annotation run.cordon.network.allow", "at least one host"}, config: true},
		{name: "control char", a: map[string]string{"run.cordon.deny": "/a\x01b"}, wantErr: []string{"annotation run.cordon.deny", "control character"}, config: true},
		{name: "relative audit", a: map[string]string{"run.cordon.audit": "a.jsonl"}, wantErr: []string{"run.cordon.audit", "absolute host path"}},
		{name: "every problem at once", a: map[string]string{"run.cordon.deny": "x", "run.cordon.protect": "y", "run.cordon.x": "1"},
			wantErr: []string{"run.cordon.deny", "run.cordon.protect", "run.cordon.x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ociruntime.ParseBoundary(tc.a, root)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got %+v, want %+v", got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want %v (got %+v)", tc.wantErr, got)
			}
			if !errors.Is(err, ociruntime.ErrAnnotation) {
				t.Errorf("%v does not match ErrAnnotation", err)
			}
			if tc.config != errors.Is(err, spec.ErrInvalidConfig) {
				t.Errorf("errors.Is(ErrInvalidConfig) = %v, want %v: %v", !tc.config, tc.config, err)
			}
			var ae *ociruntime.AnnotationError
			if !errors.As(err, &ae) || !strings.HasPrefix(strings.ToLower(ae.Annotation), "run.cordon.") {
				t.Errorf("%v is not an *AnnotationError naming its annotation", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

func ExampleParseBoundary() {
	// The bundle's root filesystem (a folder of its own: one that held the
	// caller's $HOME would be refused).
	rootfs, err := os.MkdirTemp("", "rootfs")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(rootfs)
	b, err := ociruntime.ParseBoundary(map[string]string{
		"run.cordon.deny":    "/etc/secret,/keys/",
		"run.cordon.protect": "/app/config.yaml",
	}, rootfs)
	fmt.Println(b.Deny, b.Protect, err)
	_, err = ociruntime.ParseBoundary(map[string]string{"run.cordon.deny": "etc/secret"}, rootfs)
	fmt.Println(err)
	// Output:
	// [/etc/secret /keys] [/app/config.yaml] <nil>
	// annotation run.cordon.deny: "etc/secret" is not an absolute container path; fix: write absolute container paths, comma-separated: /etc/secret,/data/keys
}
