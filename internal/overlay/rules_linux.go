package overlay

// refuse returns the entry that forbids changing the host path p, and
// whether it is a deny entry (which no flag lifts).
func (r Rules) refuse(p string) (string, bool) {
	for _, d := range r.deny {
		if d.match.MatchUnder(p) {
			return d.text, true
		}
	}
	for _, d := range r.protect {
		if d.match.MatchUnder(p) {
			return d.text, false
		}
	}
	return "", false
}
