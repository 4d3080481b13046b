//go:build cgo && !noseccomp

package seccomp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/opencontainers/runc/libcontainer/configs"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Support reports the libseccomp compiled in.
func Support() (bool, string) {
	maj, min, micro := libseccomp.GetLibraryVersion()
	return true, fmt.Sprintf("libseccomp %d.%d.%d compiled in", maj, min, micro)
}

// LibVersion names the libseccomp that compiles filters, for the
// cache key.
func LibVersion() string {
	maj, min, micro := libseccomp.GetLibraryVersion()
	return fmt.Sprintf("%d.%d.%d", maj, min, micro)
}

// Compile turns libcontainer's seccomp config into a BPF program with
// libseccomp, building the filter exactly as libcontainer's InitSeccomp
// does (same default action, architectures, binary-tree optimization and
// per-syscall rule construction), but exporting it instead of loading it,
// so it can be compiled once and cached.
func Compile(c *configs.Seccomp) ([]byte, error) {
	defAct, err := seccompAction(c.DefaultAction, c.DefaultErrnoRet)
	if err != nil {
		return nil, err
	}
	filter, err := libseccomp.NewFilter(defAct)
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	defer filter.Release()
	for _, a := range c.Architectures {
		arch, err := libseccomp.GetArchFromString(a)
		if err != nil {
			return nil, fmt.Errorf("seccomp architecture %q: %w", a, err)
		}
		if err := filter.AddArch(arch); err != nil {
			return nil, fmt.Errorf("seccomp architecture %q: %w", a, err)
		}
	}
	if _, err := LoadFlags(c); err != nil {
		return nil, err
	}
	if len(c.Syscalls) > 32 {
		_ = filter.SetOptimize(2) // as libcontainer: best effort
	}
	// The filter is loaded by cordon's init, which runs with no_new_privs
	// already set by libcontainer.
	if err := filter.SetNoNewPrivsBit(false); err != nil {
		return nil, err
	}
	for _, call := range c.Syscalls {
		if call == nil || call.Name == "" {
			return nil, errors.New("seccomp: empty syscall rule")
		}
		act, err := seccompAction(call.Action, call.ErrnoRet)
		if err != nil {
			return nil, err
		}
		if act == defAct {
			continue
		}
		nr, err := libseccomp.GetSyscallFromName(call.Name)
		if err != nil {
			continue // unknown on this architecture: libcontainer ignores it too
		}
		if len(call.Args) == 0 {
			if err := filter.AddRule(nr, act); err != nil {
				return nil, fmt.Errorf("seccomp rule %s: %w", call.Name, err)
			}
			continue
		}
		var conds []libseccomp.ScmpCondition
		counts := map[uint]int{}
		for _, a := range call.Args {
			op, err := seccompOp(a.Op)
			if err != nil {
				return nil, fmt.Errorf("seccomp rule %s: %w", call.Name, err)
			}
			cond, err := libseccomp.MakeCondition(a.Index, op, a.Value, a.ValueTwo)
			if err != nil {
				return nil, fmt.Errorf("seccomp rule %s: %w", call.Name, err)
			}
			counts[a.Index]++
			conds = append(conds, cond)
		}
		multi := false
		for _, n := range counts {
			multi = multi || n > 1
		}
		if multi {
			for _, cond := range conds {
				if err := filter.AddRuleConditional(nr, act, []libseccomp.ScmpCondition{cond}); err != nil {
					return nil, fmt.Errorf("seccomp rule %s: %w", call.Name, err)
				}
			}
		} else if err := filter.AddRuleConditional(nr, act, conds); err != nil {
			return nil, fmt.Errorf("seccomp rule %s: %w", call.Name, err)
		}
	}
	var buf bytes.Buffer
	if err := exportBPF(filter, &buf); err != nil {
		return nil, err
	}
	if buf.Len() == 0 || buf.Len()%8 != 0 {
		return nil, fmt.Errorf("seccomp: libseccomp exported %d bytes, not a BPF program", buf.Len())
	}
	return buf.Bytes(), nil
}

func seccompAction(a configs.Action, errnoRet *uint) (libseccomp.ScmpAction, error) {
	ret := int16(1) // EPERM, as libcontainer
	if errnoRet != nil {
		ret = int16(*errnoRet)
	}
	switch a {
	case configs.Kill, configs.KillThread:
		return libseccomp.ActKillThread, nil
	case configs.KillProcess:
		return libseccomp.ActKillProcess, nil
	case configs.Errno:
		return libseccomp.ActErrno.SetReturnCode(ret), nil
	case configs.Trap:
		return libseccomp.ActTrap, nil
	case configs.Allow:
		return libseccomp.ActAllow, nil
	case configs.Log:
		return libseccomp.ActLog, nil
	case configs.Notify:
		return libseccomp.ActNotify, nil
	}
	return libseccomp.ActInvalid, fmt.Errorf("seccomp action %d is not supported by cordon's precompiled filters", a)
}

func seccompOp(op configs.Operator) (libseccomp.ScmpCompareOp, error) {
	switch op {
	case configs.EqualTo:
		return libseccomp.CompareEqual, nil
	case configs.NotEqualTo:
		return libseccomp.CompareNotEqual, nil
	case configs.GreaterThan:
		return libseccomp.CompareGreater, nil
	case configs.GreaterThanOrEqualTo:
		return libseccomp.CompareGreaterEqual, nil
	case configs.LessThan:
		return libseccomp.CompareLess, nil
	case configs.LessThanOrEqualTo:
		return libseccomp.CompareLessOrEqual, nil
	case configs.MaskEqualTo:
		return libseccomp.CompareMaskedEqual, nil
	}
	return libseccomp.CompareInvalid, fmt.Errorf("seccomp operator %d", op)
}

// exportBPF writes the filter's BPF to w through a memfd (libseccomp
// 2.5 exports only to a file descriptor).
func exportBPF(f *libseccomp.ScmpFilter, w *bytes.Buffer) error {
	fd, err := unix.MemfdCreate("cordon-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("seccomp export: %w", err)
	}
	file := os.NewFile(uintptr(fd), "cordon-seccomp")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return fmt.Errorf("seccomp export: %w", err)
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = w.ReadFrom(file)
	return err
}
