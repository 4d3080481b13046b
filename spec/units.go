package spec

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
)

// byteUnits maps a lower-case size unit to its multiplier. Single letters
// are binary, as in Docker's --memory flag.
var byteUnits = map[string]int64{
	"":    1,
	"b":   1,
	"k":   1 << 10,
	"kib": 1 << 10,
	"kb":  1000,
	"m":   1 << 20,
	"mib": 1 << 20,
	"mb":  1000 * 1000,
	"g":   1 << 30,
	"gib": 1 << 30,
	"gb":  1000 * 1000 * 1000,
	"t":   1 << 40,
	"tib": 1 << 40,
	"tb":  1000 * 1000 * 1000 * 1000,
}

// sizeHint is the fix text for a malformed size.
const sizeHint = `write a whole number of bytes or a number with a unit: "4096", "512MiB", "1GiB", "100MB" (KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB of 1000, K/M/G/T mean KiB/MiB/GiB/TiB)`

// ParseBytes parses a size such as "4096", "512MiB", "1.5GiB" or "100MB".
// KiB, MiB, GiB and TiB (and the single letters K, M, G, T) are powers of
// 1024; KB, MB, GB and TB are powers of 1000; units are case-insensitive and
// may follow a space. A fractional size is rounded down to whole bytes.
// Negative sizes and sizes above math.MaxInt64 are errors; "0" is accepted
// here and rejected by the callers for which zero makes no sense.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty size")
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	if num == "" || strings.Count(num, ".") > 1 || strings.HasPrefix(num, ".") || strings.HasSuffix(num, ".") {
		return 0, fmt.Errorf("size %q is not a number with an optional unit", s)
	}
	mult, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q has an unknown unit %q", s, strings.TrimSpace(t[i:]))
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("size %q is not a number with an optional unit", s)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !n.IsInt64() {
		return 0, fmt.Errorf("size %q is too large (the maximum is %d bytes)", s, int64(math.MaxInt64))
	}
	return n.Int64(), nil
}

// durationHint is the fix text for a malformed duration.
const durationHint = `write a duration with a unit: "30s", "5m", "1h30m", "500ms"`

// parseDuration parses a Go duration such as "30s" or "1h30m". A bare number
// is refused, since "30" could mean seconds or nanoseconds.
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty duration")
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		if strings.Trim(t, "0123456789.") == "" {
			return 0, fmt.Errorf("duration %q has no unit", s)
		}
		return 0, fmt.Errorf("duration %q is not valid", s)
	}
	return d, nil
}
