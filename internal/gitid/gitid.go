package gitid

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Identity is a git user.name and user.email.
type Identity struct {
	Name, Email string
}

// Read returns the caller's git identity as git sees it in dir (so that an
// includeIf "gitdir:" of the caller's global config applies), taking only
// the global and system scopes: a repository's own config and the command
// line's are left to git in the sandbox. git runs as the caller, reading
// config and running nothing. No git, or no identity, is the zero Identity.
func Read(dir string) Identity {
	var id Identity
	out, err := gitConfig(dir)
	if err != nil && dir != "/" {
		out, _ = gitConfig("/")
	}
	for _, line := range strings.Split(string(out), "\n") {
		scope, rest, ok := strings.Cut(line, "\t")
		if !ok || scope != "global" && scope != "system" {
			continue
		}
		key, val, _ := strings.Cut(rest, " ")
		switch key {
		case "user.name":
			id.Name = val
		case "user.email":
			id.Email = val
		}
	}
	return id
}

func gitConfig(dir string) ([]byte, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(git, "config", "--show-scope", "--get-regexp", `^user\.(name|email)$`)
	cmd.Dir = dir
	env := []string{"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0"}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		// The repository and command-line config are not carried; which
		// global and system configs the caller's git reads is kept.
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT":
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = env
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return out, nil // no key set
	}
	return out, err
}

// Config returns the generated config for id: an include of system (the
// system config the sandbox's git would read otherwise, when not ""),
// then a [user] section with id's name and email, each only when set.
func Config(id Identity, system string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# Written by cordon: the caller's git identity (sandbox key git_identity).\n")
	if system != "" {
		fmt.Fprintf(&b, "[include]\n\tpath = %s\n", quote(system))
	}
	b.WriteString("[user]\n")
	for _, kv := range [][2]string{{"name", id.Name}, {"email", id.Email}} {
		if kv[1] == "" {
			continue
		}
		if strings.ContainsAny(kv[1], "\n\r\x00") {
			return nil, fmt.Errorf("%w: user.%s holds a line end or a NUL", ErrIdentity, kv[0])
		}
		fmt.Fprintf(&b, "\t%s = %s\n", kv[0], quote(kv[1]))
	}
	return b.Bytes(), nil
}

// quote writes v as a git config value: in double quotes, with backslash
// and double quote escaped.
func quote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// File writes data, read-only, to a file named by its hash in the caller's
// cache directory (cordon/git below os.UserCacheDir, else a directory of
// the caller's own in the temporary directory), and returns its path. A
// file with that name and content is used as it is.
func File(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	name := "identity-" + hex.EncodeToString(sum[:8]) + ".gitconfig"
	dir, err := ownDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if old, err := readNoFollow(p); err == nil && bytes.Equal(old, data) {
		return p, nil
	}
	tmp, err := os.CreateTemp(dir, ".identity-*")
	if err != nil {
		return "", fmt.Errorf("git identity file: %w", err)
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(0o444)
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), p)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("git identity file: %w", werr)
	}
	return p, nil
}

// ownDir is a directory of the caller's alone (mode 0700, no symlink) for
// the identity files.
func ownDir() (string, error) {
	var dirs []string
	if c, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(c, "cordon", "git"))
	}
	dirs = append(dirs, filepath.Join(os.TempDir(), "cordon-git-"+strconv.Itoa(os.Geteuid())))
	var errs []error
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := ownedDir(d); err != nil {
			errs = append(errs, err)
			continue
		}
		return d, nil
	}
	return "", fmt.Errorf("git identity: no directory of the caller's own: %w", errors.Join(errs...))
}
