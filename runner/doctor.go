package runner

// Capability is one thing a host can or cannot enforce.
type Capability struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}
