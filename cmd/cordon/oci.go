package main

import (
	"os"
	"path/filepath"

	"github.com/cordon-run/cordon"
)

// ociName is the link name that makes cordon an OCI runtime with runc's
// command line (docs/oci.md); `make install` creates it.
const ociName = "cordon-oci"

// maybeOCI runs the OCI runtime when cordon was invoked as cordon-oci, and
// never returns then.
func maybeOCI() {
	if filepath.Base(os.Args[0]) == ociName {
		os.Exit(cordon.OCIMain(os.Args[1:]))
	}
}
