package broker

import (
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/decide"
)

// A symlink at a directory that a deny or protect path lies below would
// send the host's later writes to that path (a secret it creates, a hook
// git makes) to where the link points, which no rule reaches. So no
// symlink is made there (symlink), renamed or exchanged there (rename),
// carried there in a renamed directory (walk), or given a second name
// there by a hard link of a symlink (link).

// LeadPolicy is a Policy that also names the rule whose guarded path lies
// below p: a symlink at p would send the host's later writes to that path
// (a secret it creates, a hook git makes) somewhere the rule does not
// reach. A Policy without it allows such symlinks.
type LeadPolicy interface {
	Policy
	// Leads returns the rule whose guarded path (a path entry, or a
	// pattern's literal prefix) lies strictly below the sandbox path p,
	// or "".
	Leads(p string) string
}

// leads returns the refusal of a symlink at p (see LeadPolicy), or "".
func (b *Broker) leads(p string) string {
	lp, ok := b.policy.(LeadPolicy)
	if !ok {
		return ""
	}
	if rule := lp.Leads(p); rule != "" {
		return rule + " (a symlink at " + p + " would send the host's writes below it elsewhere)"
	}
	return ""
}

// linkedSymlinkOK decides a hard link whose source (the O_PATH descriptor
// fd) is a symlink: the new name is a symlink made at to, decided as
// symlink decides one (not at a git redirect place, not above a guarded
// path). A source that cannot be looked at is refused.
func (b *Broker) linkedSymlinkOK(op string, fd int, to loc) bool {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		b.deny(op, to.path, "protect (the link's source cannot be looked at: "+err.Error()+")")
		return false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return true
	}
	if decide.RedirectPlace(to.path) {
		b.deny(op, to.path, gitSymlinkRule)
		return false
	}
	if rule := b.leads(to.path); rule != "" {
		b.deny(op, to.path, rule)
		return false
	}
	return true
}
