package runner

// FailureOverlayInUse means the command was not run because the overlay it
// was to write (cordon run --overlay NAME, workspace_mode: overlay) is held
// by another run, session or apply: overlayfs leaves two mounts of one
// upper layer undefined. The detail names the overlay and what to do.
const FailureOverlayInUse FailureType = "overlay_in_use"
