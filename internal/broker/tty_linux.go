package broker

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// controllingPTS returns the sandbox path of pid's controlling terminal,
// a pseudo-terminal of the sandbox's own devpts (cordon gives a run with a
// terminal one), so that an open of /dev/tty reaches the same terminal it
// would without the broker. Without a controlling terminal, or with one
// that is not a pseudo-terminal, it is ENXIO, as the kernel answers.
func controllingPTS(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", unix.ESRCH
	}
	// The command name may hold spaces and parentheses: fields start after
	// the last ')'. tty_nr is the 7th field, the 5th after it.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", unix.ENXIO
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 5 {
		return "", unix.ENXIO
	}
	nr, err := strconv.ParseUint(f[4], 10, 32)
	if err != nil || nr == 0 {
		return "", unix.ENXIO
	}
	major, minor := unix.Major(nr), unix.Minor(nr)
	// Unix98 pseudo-terminal slaves: majors 136 to 143.
	if major < 136 || major > 143 {
		return "", unix.ENXIO
	}
	return fmt.Sprintf("/dev/pts/%d", (major-136)*256+minor), nil
}
