package runner

// Capability is one thing a host can or cannot enforce.
type Capability struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Required: the default profile (workspace) cannot run without it, so
	// `cordon doctor` fails when it is missing.
	Required bool `json:"required,omitempty"`
}

// Missing returns the required capabilities that caps lack.
func Missing(caps []Capability) []Capability {
	var out []Capability
	for _, c := range caps {
		if c.Required && !c.OK {
			out = append(out, c)
		}
	}
	return out
}
