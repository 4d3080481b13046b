package awake

import "time"

// ExecQuiet is the longest a session's exec keeps the keeper quiet (see
// Quiet): its hand-offs (client, supervisor, shim, the command's start,
// its exit and the answer) take about 3 ms for `cordon exec N -- true` on
// the hosts cordon is measured on, 5 to 6 ms at the 90th percentile when
// seven builds share the machine; a longer command's own brokered calls
// get the keeper back after this.
const ExecQuiet = 10 * time.Millisecond
