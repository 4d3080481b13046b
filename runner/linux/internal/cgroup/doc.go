// Package cgroup is the Linux backend's side of cgroups that libcontainer
// does not cover: the cgroup v2 subtree delegated to a rootless user (or
// the user's systemd), the leaf its processes move into, and the prewarm
// of the kernel's cgroup lock for runs as root.
package cgroup
