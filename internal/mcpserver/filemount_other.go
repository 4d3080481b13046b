//go:build !unix

package mcpserver

import "github.com/cordon-run/cordon/mounts"

// readFileMount reports no file mount: without O_NOFOLLOW the source cannot
// be opened safely, so the table's own refusal stands.
func readFileMount(*mounts.Table, string, string, int) (string, bool, error) { return "", false, nil }
