package cordon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/cordon-run/cordon/internal/hostfile"
	"github.com/cordon-run/cordon/spec"
)

// ErrUnsafeReport is matched by OpenReport's refusal of a path a sandboxed
// command could have turned against another file.
var ErrUnsafeReport = hostfile.ErrUnsafe

// Report is the JSON file a front end writes an invocation's Result to
// (cordon run --report). It is opened before anything runs, through
// OpenReport, and written through that descriptor afterwards, so nothing
// the command does to the path during the run (a symbolic link, a FIFO)
// can redirect or block the write; WithReportFile keeps the path out of
// the sandbox's reach meanwhile.
type Report struct {
	f *os.File
}

// OpenReport opens (creating or truncating) the report file at path, the
// way cordon writes every file on the host for its caller: no symbolic link
// a sandbox could have planted is followed, in the file name or in any
// folder; only a regular file with one link is accepted; the open never
// blocks. A refusal matches ErrUnsafeReport and names the fix.
func OpenReport(path string) (*Report, error) {
	f, err := hostfile.Open(path, false, 0o644)
	if err != nil {
		return nil, fmt.Errorf("report %s: %w", path, err)
	}
	return &Report{f: f}, nil
}

// Write writes res as indented JSON and closes the file. A nil *Report
// does nothing.
func (r *Report) Write(res Result) error {
	if r == nil {
		return nil
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		r.f.Close()
		return err
	}
	_, werr := r.f.Write(append(data, '\n'))
	return errors.Join(werr, r.f.Close())
}

// Refused is the Result of an invocation cordon refused before anything
// ran (exit 2): a bad flag, config or worker file, or a refused derivation.
func Refused(err error) Result {
	return Result{ExitCode: 2, FailureType: FailureConfigError, FailureDetail: err.Error()}
}

// WithReportFile keeps path, where a front end writes the run's report, out
// of the sandbox's reach as the audit logs are: the command can neither
// read, replace nor plant anything at it while it runs. "" adds nothing.
func WithReportFile(path string) ProjectOption {
	return func(p *Project) {
		if path != "" {
			p.guarded = append(p.guarded, path)
			spec.GuardControlFiles(&p.cfg.Sandbox, nil, []string{path})
		}
	}
}
