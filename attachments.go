package cordon

import (
	"github.com/cordon-run/cordon/internal/attach"
	"github.com/cordon-run/cordon/internal/audit"
)

// AttachmentPolicy caps the attachments one derivation may pass: how many
// files, how many bytes in total, which suffixes.
type AttachmentPolicy = attach.Policy

// AttachmentError is one refused attachment; it matches one of the
// ErrAttachment sentinels and, when the query API refused the path, the
// mounts sentinel behind it.
type AttachmentError = attach.Error

// DefaultAttachmentPolicy is the policy Attach uses unless AttachPolicy
// sets another: at most 16 files, 10 MiB in total.
func DefaultAttachmentPolicy() AttachmentPolicy { return attach.DefaultPolicy() }

// Sentinels matched by an AttachmentError.
var (
	// ErrAttachmentOutside: the parent sandbox cannot read the path.
	ErrAttachmentOutside = attach.ErrOutside
	// ErrAttachmentNotFile: the path is missing or not a regular file.
	ErrAttachmentNotFile = attach.ErrNotFile
	// ErrAttachmentCount: more attachments than the policy allows.
	ErrAttachmentCount = attach.ErrCount
	// ErrAttachmentSize: the attachments are larger than the policy or the
	// parent mount's max_file_bytes allows.
	ErrAttachmentSize = attach.ErrSize
	// ErrAttachmentSuffix: a file's suffix is not allowed.
	ErrAttachmentSuffix = attach.ErrSuffix
	// ErrAttachmentChild: the child sandbox cannot show the attachment.
	ErrAttachmentChild = attach.ErrChild
)

// ErrAuditWrite is matched by the error of a run or a refusal whose audit
// record cannot be written.
var ErrAuditWrite = audit.ErrWrite
