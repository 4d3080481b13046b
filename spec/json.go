package spec

import (
	"encoding/json"
	"fmt"
	"math"
)

// limitsJSON is the JSON form of Limits, in the units a person writes.
type limitsJSON struct {
	Timeout  string   `json:"timeout,omitempty"`
	Memory   string   `json:"memory,omitempty"`
	Pids     int64    `json:"pids,omitempty"`
	FileSize string   `json:"file_size,omitempty"`
	CPUs     *float64 `json:"cpus,omitempty"`
	Output   string   `json:"output,omitempty"`
}

// MarshalJSON renders the limits that are set in human units, with the same
// keys as the config: {"timeout":"30s","memory":"512MiB","pids":256}.
func (l Limits) MarshalJSON() ([]byte, error) {
	var j limitsJSON
	if l.Timeout > 0 {
		j.Timeout = l.Timeout.String()
	}
	if l.Memory > 0 {
		j.Memory = FormatBytes(l.Memory)
	}
	if l.Pids > 0 {
		j.Pids = l.Pids
	}
	if l.FileSize > 0 {
		j.FileSize = FormatBytes(l.FileSize)
	}
	if l.CPUs > 0 && !math.IsInf(l.CPUs, 0) {
		c := l.CPUs
		j.CPUs = &c
	}
	if l.Output > 0 {
		j.Output = FormatBytes(l.Output)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the form MarshalJSON writes, so that run reports can
// be read back.
func (l *Limits) UnmarshalJSON(data []byte) error {
	var j limitsJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	var out Limits
	if j.Timeout != "" {
		d, err := parseDuration(j.Timeout)
		if err != nil {
			return fmt.Errorf("limits.timeout: %w", err)
		}
		out.Timeout = d
	}
	sizes := []struct {
		key string
		in  string
		out *int64
	}{{"memory", j.Memory, &out.Memory}, {"file_size", j.FileSize, &out.FileSize}, {"output", j.Output, &out.Output}}
	for _, s := range sizes {
		if s.in == "" {
			continue
		}
		n, err := ParseBytes(s.in)
		if err != nil {
			return fmt.Errorf("limits.%s: %w", s.key, err)
		}
		*s.out = n
	}
	out.Pids = j.Pids
	if j.CPUs != nil {
		out.CPUs = *j.CPUs
	}
	*l = out
	return nil
}
