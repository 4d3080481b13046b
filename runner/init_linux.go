package runner

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"
	// nsenter joins and creates namespaces in C before the Go runtime
	// starts in the re-executed init; it does nothing in other processes.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

// Init hands over to libcontainer's container init when this process was
// re-executed as one ("init" as its first argument), and never returns then.
// Every binary that starts containers must call it first thing in main (and
// in TestMain).
func Init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init()
	}
}
