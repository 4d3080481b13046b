package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Plan is everything a backend needs to build one sandbox, from one
// translation: the spec, the host paths the guards rely on, and what is not
// enforced. Nothing is created on the host for it: a deny or protect path
// missing at start has no mount; the runner's broker refuses creating it.
type Plan struct {
	// Spec is the OCI runtime spec.
	Spec *specs.Spec
	// Placeholders are, with RunOptions.Placeholders only, the missing
	// deny and protect paths inside writable mounts that the caller
	// creates as empty directories (see PlaceholderDirs); the spec guards
	// them as such.
	Placeholders []Placeholder
	// Guarded are the host paths the guards rely on (see GuardedPaths).
	Guarded []string
	// Unenforced are the keys of the parts of the sandbox that are not
	// enforced, as AnnotationUnenforced lists them.
	Unenforced []string
	// Aliased is the sandbox the spec was made from, with its aliases
	// (WithAliases): the other enforcement of the same run (the broker's
	// policy) takes it rather than work them out again.
	Aliased *Sandbox
}

// NewPlan translates sb into the plan of a run of proc: ToOCI's spec, the
// guarded paths and what is not enforced. A backend calls it once.
func NewPlan(sb *Sandbox, proc Process, ro RunOptions, opts ...Opt) (*Plan, error) {
	return newPlan(sb, proc, ro, currentHost(ro.Host), opts...)
}

func newPlan(sb *Sandbox, proc Process, ro RunOptions, h hostInfo, opts ...Opt) (*Plan, error) {
	if sb == nil {
		return nil, errors.New("oci: no sandbox")
	}
	// Deny and protect hold at every sandbox path of the same host file,
	// and on what their patterns' matches that are symlinks reach.
	sb, err := withPatternLinks(sb, h.systemDirs(sb), ro.Links)
	if err != nil {
		return nil, err
	}
	sb = WithAliases(sb)
	var phs []Placeholder
	if ro.Placeholders {
		phs = placeholders(sb, h.lstat)
		h.lstat = withPlaceholders(h.lstat, phs)
	}
	s, err := toOCI(sb, proc, ro, h, opts...)
	if err != nil {
		return nil, err
	}
	p := &Plan{Spec: s, Placeholders: phs, Guarded: GuardedPaths(sb), Aliased: sb}
	if u, ok := s.Annotations[AnnotationUnenforced]; ok {
		if err := json.Unmarshal([]byte(u), &p.Unenforced); err != nil {
			return nil, fmt.Errorf("annotations: %w", err)
		}
	}
	return p, nil
}

// withPlaceholders wraps lstat so that the directories the runner will
// create for phs (each placeholder and its missing parents) look like the
// empty directories they will be; every other answer is lstat's.
func withPlaceholders(lstat func(string) (fs.FileInfo, error), phs []Placeholder) func(string) (fs.FileInfo, error) {
	if len(phs) == 0 {
		return lstat
	}
	dirs := map[string]bool{}
	for _, ph := range phs {
		cur := ph.Zone
		for _, name := range strings.Split(ph.Rel, "/") {
			cur = filepath.Join(cur, name)
			dirs[cur] = true
		}
	}
	return func(p string) (fs.FileInfo, error) {
		fi, err := lstat(p)
		if err != nil && dirs[p] && errors.Is(err, fs.ErrNotExist) {
			return placeholderInfo(filepath.Base(p)), nil
		}
		return fi, err
	}
}

// placeholderInfo describes a placeholder directory that does not exist yet.
type placeholderInfo string

func (n placeholderInfo) Name() string     { return string(n) }
func (placeholderInfo) Size() int64        { return 0 }
func (placeholderInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o755 }
func (placeholderInfo) ModTime() time.Time { return time.Time{} }
func (placeholderInfo) IsDir() bool        { return true }
func (placeholderInfo) Sys() any           { return nil }
