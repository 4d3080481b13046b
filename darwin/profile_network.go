package darwin

import (
	"fmt"
	"strings"
)

// networkSection is the profile's network: off, on, or an allow list
// enforced by the run's proxy.
func (b *profileBuilder) networkSection() section {
	if b.proxy {
		return b.proxySection()
	}
	if !b.network {
		return section{
			comment: "Network off: no sockets to any address, Unix sockets included; socket pairs between this sandbox's processes still work.",
			rules: []rule{
				{action: "allow", ops: []string{"system-socket"}, filter: "(socket-domain AF_UNIX)"},
				{action: "deny", ops: []string{"network*"}, tagged: true},
			},
		}
	}
	s := section{comment: "Network on: IP to every address, plus the services DNS and TLS need. Not Unix sockets at filesystem paths (docker.sock, ssh-agent), which no file rule shows; mDNSResponder's socket is the one DNS needs."}
	s.rules = append(s.rules,
		rule{action: "allow", ops: []string{"network-outbound"}, filter: `(remote ip "*:*")`},
		rule{action: "allow", ops: []string{"network-inbound"}, filter: `(local ip "*:*")`},
		rule{action: "allow", ops: []string{"network-bind"}, filter: `(local ip "*:*")`},
		rule{action: "allow", ops: []string{"network-outbound"}, filter: `(literal "/private/var/run/mDNSResponder")`},
		rule{action: "allow", ops: []string{"system-socket"}},
	)
	for _, name := range networkMachServices {
		s.rules = append(s.rules, rule{action: "allow", ops: []string{"mach-lookup"}, filter: "(global-name " + quote(name) + ")"})
	}
	return s
}

// proxySection is the network of a sandbox with an allow list: TCP to the
// run's proxy on localhost and nothing else. No DNS (neither
// mDNSResponder's socket nor the resolver's Mach services: cordon
// resolves the names it allows), no UDP, no other address or port, no
// Unix sockets at paths, no listening; and no trust daemon, which fetches
// certificates and revocation data over the network on a program's
// behalf. A program that ignores the proxy variables cannot connect.
func (b *profileBuilder) proxySection() section {
	comment := fmt.Sprintf("Network allow list (%s): TCP to cordon's proxy at localhost:%d only, which decides every connection; no DNS, no UDP, no other address, no Unix sockets at paths.",
		strings.Join(b.sb.Network.Allow, ", "), b.proxyPort)
	if b.proxyPort == 0 {
		comment += " Port 0 stands for the port each run's proxy listens on."
	}
	s := section{
		comment: comment,
		rules: []rule{
			{action: "allow", ops: []string{"system-socket"}, filter: "(socket-domain AF_UNIX)"},
			{action: "allow", ops: []string{"system-socket"}, filter: "(socket-domain AF_INET)"},
			{action: "allow", ops: []string{"system-socket"}, filter: "(socket-domain AF_INET6)"},
			{action: "deny", ops: []string{"network*"}, tagged: true},
			{action: "allow", ops: []string{"network-outbound"}, filter: fmt.Sprintf(`(remote tcp "localhost:%d")`, b.proxyPort)},
		},
	}
	if b.proxyConnect != "" {
		// ssh's ProxyCommand (GIT_SSH_COMMAND): cordon's own executable,
		// read and run, and nothing else of where it is installed.
		s.comment += " ssh's ProxyCommand is cordon's own executable (cordon proxy-connect), which the sandbox may read and run."
		s.rules = append(s.rules, rule{action: "allow", ops: []string{"file-read*"}, filter: "(literal " + quote(b.proxyConnect) + ")"})
	}
	return s
}
