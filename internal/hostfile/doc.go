// Package hostfile opens the files cordon writes on the host for its
// caller, outside every sandbox: the JSON report (--report) and the audit
// logs. A sandboxed command may have written the folders these files live
// in, so it could have planted a symbolic link, a FIFO or a hard link where
// cordon will write (issue 9, items 1 to 3). Open walks the path one
// component at a time from an opened directory, never following a symbolic
// link that a sandbox of this caller could have made, and opens the file
// itself without following a link and without blocking, then accepts only
// a regular file with no other hard link.
package hostfile
