package cordon

import (
	"fmt"

	"github.com/cordon-run/cordon/darwin"
)

// SetSSHProxyCommand tells the macOS backend that exe, an absolute path,
// is the cordon command, whose hidden `proxy-connect HOST PORT`
// subcommand tunnels ssh through a run's allow-list proxy: runs with an
// allow list then get GIT_SSH_COMMAND with it as ssh's ProxyCommand, and
// their profile lets the sandbox read and run exe. Programs that embed
// cordon have no such subcommand and leave it unset. It changes nothing
// on Linux, where the allow list is enforced without a proxy.
func SetSSHProxyCommand(exe string) error {
	if err := darwin.SetProxyConnect(exe); err != nil {
		return fmt.Errorf("ssh proxy command: %w", err)
	}
	return nil
}
