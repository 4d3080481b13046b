package broker

import "testing"

// awakePolicy is allowAll with KeepAwake answering keep.
type awakePolicy struct {
	allowAll
	keep bool
}

func (p awakePolicy) KeepAwake() bool { return p.keep }

// TestKeepsAwake: the keeper is the default, and a policy that says no
// (a sandbox with a CPU limit, cordon-oci) turns it off.
func TestKeepsAwake(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Policy
		want bool
	}{
		{"a policy that does not say", allowAll{}, true},
		{"a policy that keeps awake", awakePolicy{keep: true}, true},
		{"a policy that does not", awakePolicy{keep: false}, false},
	} {
		if got := keepsAwake(tc.p); got != tc.want {
			t.Errorf("%s: keepsAwake = %v, want %v", tc.name, got, tc.want)
		}
	}
}
