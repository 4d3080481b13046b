package darwin

import (
	"errors"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

func TestSetProxyConnect(t *testing.T) {
	t.Cleanup(func() { _ = SetProxyConnect("") })
	for _, c := range []struct {
		path string
		want error
	}{
		{"/usr/local/bin/cordon", nil},
		{"/opt/homebrew/Cellar/cordon/1.2_3+x/bin/cordon", nil},
		{"", nil},
		{"bin/cordon", ErrBadRequest},
		{"/Users/dev/my tools/cordon", ErrUnsafeString},
		{"/Users/dev/it's/cordon", ErrUnsafeString},
		{"/Users/dev/100%/cordon", ErrUnsafeString},
		{"/Users/dev/$(id)/cordon", ErrUnsafeString},
	} {
		_ = SetProxyConnect("/before")
		err := SetProxyConnect(c.path)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("SetProxyConnect(%q) = %v, want %v", c.path, err, c.want)
		}
		// A refused path leaves the setting as it was.
		want := c.path
		if c.want != nil {
			want = "/before"
		}
		if got := proxyConnectPath(); got != want {
			t.Errorf("after SetProxyConnect(%q): %q, want %q", c.path, got, want)
		}
	}
}

// TestSSHProxyEnvWins: the run's GIT_SSH_COMMAND names cordon's
// proxy-connect and wins over one the sandbox's env sets, as the proxy
// variables do.
func TestSSHProxyEnvWins(t *testing.T) {
	sb := &spec.Sandbox{Env: spec.Env{Set: map[string]string{"GIT_SSH_COMMAND": "ssh -o ProxyCommand=none"}}}
	env := processEnv(sb, "/tmp/x", func(string) (string, bool) { return "", false }, sshProxyEnv("/usr/local/bin/cordon"))
	want := "GIT_SSH_COMMAND=ssh -o ProxyCommand='/usr/local/bin/cordon proxy-connect %h %p'"
	for _, kv := range env {
		if kv == want {
			return
		}
	}
	t.Fatalf("env %q lacks %q", env, want)
}
