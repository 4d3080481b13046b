package spec

import (
	"errors"
	"os"
	"path/filepath"
)

// ProjectConfigName is the file name of a project config.
const ProjectConfigName = "cordon.yaml"

// FindProjectConfig walks up from dir, as git finds .git, and returns the
// first cordon.yaml it meets, or "" when there is none up to the root.
func FindProjectConfig(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, ProjectConfigName)
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			return p, nil
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}
