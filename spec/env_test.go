package spec

import (
	"slices"
	"testing"
)

// TestProcessEnvProxyVariables: with a network allow list the host's proxy
// variables are not passed, in any case, while a proxy the config sets is
// kept; without one they pass as any other variable.
func TestProcessEnvProxyVariables(t *testing.T) {
	host := map[string]string{
		"PATH": "/usr/bin", "HTTPS_PROXY": "http://10.0.0.1:3128", "http_proxy": "http://127.0.0.1:3128",
		"No_Proxy": "localhost", "ALL_PROXY": "socks5://127.0.0.1:1080", "ftp_proxy": "http://10.0.0.1:21", "LANG": "C.UTF-8",
	}
	lookup := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	pass := []string{"PATH", "HTTPS_PROXY", "http_proxy", "No_Proxy", "ALL_PROXY", "ftp_proxy", "LANG"}
	allow := Network{Enabled: true, Allow: []string{"github.com:443"}}
	for _, c := range []struct {
		name string
		net  Network
		set  map[string]string
		want []string
	}{
		{"allow list", allow, nil, []string{"HOME=/tmp", "LANG=C.UTF-8", "PATH=/usr/bin"}},
		{"allow list, proxy set by the config", allow, map[string]string{"HTTPS_PROXY": "http://proxy.example:3128"},
			[]string{"HOME=/tmp", "HTTPS_PROXY=http://proxy.example:3128", "LANG=C.UTF-8", "PATH=/usr/bin"}},
		{"network true", Network{Enabled: true}, nil, []string{"ALL_PROXY=socks5://127.0.0.1:1080", "HOME=/tmp", "HTTPS_PROXY=http://10.0.0.1:3128",
			"LANG=C.UTF-8", "No_Proxy=localhost", "PATH=/usr/bin", "ftp_proxy=http://10.0.0.1:21", "http_proxy=http://127.0.0.1:3128"}},
		{"network false", Network{}, nil, []string{"ALL_PROXY=socks5://127.0.0.1:1080", "HOME=/tmp", "HTTPS_PROXY=http://10.0.0.1:3128",
			"LANG=C.UTF-8", "No_Proxy=localhost", "PATH=/usr/bin", "ftp_proxy=http://10.0.0.1:21", "http_proxy=http://127.0.0.1:3128"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb := &Sandbox{Network: c.net, Env: Env{Pass: pass, Set: c.set}}
			if got := ProcessEnvFrom(sb, lookup); !slices.Equal(got, c.want) {
				t.Errorf("ProcessEnvFrom = %q\nwant %q", got, c.want)
			}
		})
	}
}
