package runner

// DeniedCall is one call the sandbox refused, from cordon's own record of
// its refusals (the broker's, on Linux), never from what the command
// printed: a command that ignores a refusal and exits 0 still has it in
// its result.
type DeniedCall struct {
	// Op is the system call ("openat", "mkdir", "rename", ...).
	Op string `json:"op"`
	// Path is the path refused, as the sandbox sees it.
	Path string `json:"path"`
	// Rule is the rule that refused it: a deny or protect entry, a
	// read-only mount, ...
	Rule string `json:"rule"`
}

// MaxListedDenials bounds the refused calls a Result lists; DenialCount
// counts them all.
const MaxListedDenials = 20

// ListDenials returns the distinct calls of d (at most MaxListedDenials,
// in order) and how many calls d holds in all.
func ListDenials(d []DeniedCall) ([]DeniedCall, int) {
	if len(d) == 0 {
		return nil, 0
	}
	seen := map[DeniedCall]bool{}
	var out []DeniedCall
	for _, c := range d {
		if seen[c] || len(out) == MaxListedDenials {
			continue
		}
		seen[c] = true
		out = append(out, c)
	}
	return out, len(d)
}
