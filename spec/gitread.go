package spec

import (
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A build of a sandbox reads the same git configs several times (the
// includes, the code they name, the worktree of a submodule's config), and
// a run builds its sandbox more than once (the config, then the front
// end's flags) and asks again for its mount table and its plan: nine reads
// of each of the host's git configs per `cordon run`. readGitConfig reads a
// config once and gives the same bytes again while the file is the same:
// same device, inode, size, and modification and change times, none of
// them within gitRacyWindow of the read (git's own "racily clean" rule: a
// write in the same clock tick as the read could leave every time as it
// was, so such a file is read again).

// gitRacyWindow is how close to a read a file's times make it read again.
const gitRacyWindow = 50 * time.Millisecond

type gitRead struct {
	id   gitFileID
	at   time.Time
	data []byte
	err  error
}

type gitFileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

var gitReads sync.Map // path -> gitRead

// readGitConfig returns os.ReadFile(cfg), from the last read of cfg when
// the file has not changed since (see above); nil and an error for a file
// that is missing or larger than 1 MiB.
func readGitConfig(cfg string) ([]byte, error) {
	id, err := gitStat(cfg)
	if err != nil {
		return nil, err // missing (most hosts lack one of the configs)
	}
	if v, hit := gitReads.Load(cfg); hit {
		r := v.(gitRead)
		if r.id == id && r.at.UnixNano()-max(id.mtime, id.ctime) > int64(gitRacyWindow) {
			return r.data, r.err
		}
	}
	data, err := os.ReadFile(cfg)
	if err == nil && len(data) > 1<<20 {
		data, err = nil, errGitConfigSize
	}
	gitReads.Store(cfg, gitRead{id: id, at: time.Now(), data: data, err: err})
	return data, err
}

var errGitConfigSize = &os.PathError{Op: "read", Err: syscall.EFBIG}

// gitStat is the identity of the file cfg names (links followed, as the
// read follows them).
func gitStat(cfg string) (gitFileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(cfg, &st); err != nil {
		return gitFileID{}, &os.PathError{Op: "stat", Path: cfg, Err: err}
	}
	return gitFileID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, nil
}
