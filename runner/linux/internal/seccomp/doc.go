// Package seccomp compiles the sandbox's seccomp profile to a BPF program
// with libseccomp, once per profile, and caches it in memory and in the
// state directory; cordon's init loads the program from its environment.
package seccomp
