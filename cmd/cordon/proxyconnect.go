package main

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
)

func init() {
	register(command{name: "proxy-connect", hidden: true,
		summary: "ssh's ProxyCommand inside a macOS sandbox with an allow list: tunnel stdin and stdout to HOST PORT through cordon's proxy",
		run:     proxyConnectMain})
}

// proxyConnectMain is `cordon proxy-connect HOST PORT`: it asks the proxy
// named by HTTPS_PROXY (or https_proxy, ALL_PROXY, all_proxy), with the
// proxy URL's credentials, to CONNECT to HOST:PORT and then relays stdin
// and stdout both ways. A refusal's reason goes to stderr, so ssh and git
// show it. It is what the macOS backend names as ssh's ProxyCommand
// (GIT_SSH_COMMAND), since macOS's nc cannot send the proxy's credentials.
func proxyConnectMain(args []string) int {
	fs := newFlagSet("proxy-connect", "HOST PORT")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(os.Stderr, "cordon proxy-connect: want HOST PORT (as ssh's ProxyCommand: cordon proxy-connect %s)\n", "%h %p")
		return exitConfig
	}
	c, br, err := proxyConnect(fs.Arg(0), fs.Arg(1), os.LookupEnv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon proxy-connect: %v\n", err)
		if errors.Is(err, errProxyEnv) {
			return exitConfig
		}
		return exitDenied
	}
	defer c.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(c, os.Stdin)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, err = io.Copy(os.Stdout, br)
	_ = os.Stdout.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon proxy-connect: %v\n", err)
		return exitDenied
	}
	// The server has closed its side; stdin is copied until ssh closes
	// it, as ssh expects of a ProxyCommand.
	wg.Wait()
	return exitOK
}

// errProxyEnv: the environment names no usable proxy.
var errProxyEnv = errors.New("proxy variable")

// proxyVars are the variables proxy-connect reads the proxy from, in order.
var proxyVars = []string{"HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"}

// proxyConnect opens a tunnel to host:port through the proxy the
// environment names. The reader holds what the proxy sent after its answer.
func proxyConnect(host, port string, lookup func(string) (string, bool)) (net.Conn, *bufio.Reader, error) {
	name, raw := "", ""
	for _, k := range proxyVars {
		if v, ok := lookup(k); ok && v != "" {
			name, raw = k, v
			break
		}
	}
	if name == "" {
		return nil, nil, fmt.Errorf("%w: none of %s is set; fix: run inside a cordon sandbox with a network allow list, or set HTTPS_PROXY=http://USER:PASSWORD@HOST:PORT", errProxyEnv, strings.Join(proxyVars, ", "))
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Port() == "" || u.User == nil {
		return nil, nil, fmt.Errorf("%w %s is not an http://USER:PASSWORD@HOST:PORT URL; fix: set it to cordon's proxy URL", errProxyEnv, name)
	}
	pass, _ := u.User.Password()
	auth := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pass))
	target := net.JoinHostPort(host, port)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy %s (from %s): %w", u.Host, name, err)
	}
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", target, target, auth); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("proxy %s: %w", u.Host, err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("proxy %s: %w", u.Host, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		c.Close()
		why := strings.TrimSpace(string(body))
		if why == "" {
			why = resp.Status
		}
		return nil, nil, fmt.Errorf("%s refused by the proxy (%s): %w", target, resp.Status, errors.New(why))
	}
	return c, br, nil
}
