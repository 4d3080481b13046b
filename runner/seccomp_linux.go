//go:build cgo && seccomp

package runner

import libseccomp "github.com/seccomp/libseccomp-golang"

func seccompSupport() (bool, string) {
	maj, min, micro := libseccomp.GetLibraryVersion()
	return true, "libseccomp " + itoa(int(maj)) + "." + itoa(int(min)) + "." + itoa(int(micro)) + " compiled in"
}
