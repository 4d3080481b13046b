package overlay

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// State is what the manifest keeps of one host path: enough to tell that
// the host changed it (a write moves the mtime and ctime, a rename over
// it the inode), without hashing the workspace at every start.
type State struct {
	Mode  uint32
	Size  int64
	Mtime int64
	Ctime int64
	Ino   uint64
}

// Manifest is the host workspace's state when the overlay started, by
// slash path relative to the workspace; Apply updates what it lands.
type Manifest map[string]State

func stateOf(fi fs.FileInfo) State {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return State{Mode: uint32(fi.Mode()), Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	}
	return State{Mode: uint32(st.Mode), Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Ctime: ctime(st), Ino: uint64(st.Ino)}
}

// record walks workspace (never following a symlink) into a manifest. A
// directory it cannot read is left out: the overlay cannot show it either.
func record(workspace string) (Manifest, error) {
	m := Manifest{}
	err := filepath.WalkDir(workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == workspace {
				return err
			}
			return nil
		}
		if p == workspace {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(workspace, p)
		m[filepath.ToSlash(rel)] = stateOf(fi)
		return nil
	})
	return m, err
}

func (o *Overlay) manifestPath() string { return filepath.Join(o.dir, "manifest") }

func (o *Overlay) saveManifest(m Manifest) error {
	tmp := o.manifestPath() + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("overlay %s: manifest: %w", o.Name, err)
	}
	w := bufio.NewWriter(f)
	err = gob.NewEncoder(w).Encode(m)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, o.manifestPath())
	}
	if err != nil {
		return fmt.Errorf("overlay %s: manifest: %w", o.Name, err)
	}
	return nil
}
