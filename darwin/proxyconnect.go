package darwin

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// proxyConnect is the path SetProxyConnect set ("" when none).
var proxyConnect atomic.Pointer[string]

// proxyConnectChars are the characters SetProxyConnect accepts in a path:
// it goes into GIT_SSH_COMMAND, read by a shell, and then into ssh's
// ProxyCommand, which ssh expands (%) and runs through a shell again.
const proxyConnectChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+-"

// SetProxyConnect names the cordon executable (an absolute path) whose
// `proxy-connect HOST PORT` subcommand is ssh's ProxyCommand in runs with
// a network allow list: they get GIT_SSH_COMMAND naming it (macOS's nc
// cannot send the proxy's credentials), and their profile lets the
// sandbox read and run that file. Only the cordon command has that
// subcommand, so only it sets this; "" turns it off (the default). A path
// that cannot be written safely into a shell command is refused.
func SetProxyConnect(path string) error {
	if path != "" {
		if !filepath.IsAbs(path) {
			return fmt.Errorf("proxy-connect executable %q: %w: the path is not absolute", path, ErrBadRequest)
		}
		if i := strings.IndexFunc(path, func(r rune) bool { return !strings.ContainsRune(proxyConnectChars, r) }); i >= 0 {
			return fmt.Errorf("proxy-connect executable %q: %w: %q cannot go into ssh's ProxyCommand; install cordon at a path of letters, digits and / . _ + -", path, ErrUnsafeString, path[i:i+1])
		}
	}
	proxyConnect.Store(&path)
	return nil
}

// proxyConnectPath is the path SetProxyConnect set, or "".
func proxyConnectPath() string {
	if p := proxyConnect.Load(); p != nil {
		return *p
	}
	return ""
}

// sshProxyEnv is the variable that makes git's ssh use path's
// proxy-connect as its ProxyCommand.
func sshProxyEnv(path string) string {
	return "GIT_SSH_COMMAND=ssh -o ProxyCommand='" + path + " proxy-connect %h %p'"
}
