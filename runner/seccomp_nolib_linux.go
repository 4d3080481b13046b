//go:build !cgo || !seccomp

package runner

func seccompSupport() (bool, string) {
	return false, "built without the seccomp tag: sandboxes that carry a seccomp profile fail closed; rebuild with `make build`"
}
