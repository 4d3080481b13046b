package overlay

// maxEdits bounds the edit script lineDiff searches for: past it the
// whole old side is deleted and the new one added, a correct patch that
// costs no more time or memory.
const maxEdits = 2000

// edit is one line of a line diff: ' ' kept, '-' deleted, '+' added.
type edit struct {
	op   byte
	line string
}

// lineDiff is a shortest edit script from a to b (Myers' O(ND) greedy
// algorithm, walking back through the saved frontiers).
func lineDiff(a, b []string) []edit {
	// Common prefix and suffix first: most edits are small.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := make([]edit, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		out = append(out, edit{' ', l})
	}
	out = append(out, middle(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		out = append(out, edit{' ', l})
	}
	return out
}

func replaceAll(a, b []string) []edit {
	out := make([]edit, 0, len(a)+len(b))
	for _, l := range a {
		out = append(out, edit{'-', l})
	}
	for _, l := range b {
		out = append(out, edit{'+', l})
	}
	return out
}

func middle(a, b []string) []edit {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceAll(a, b)
	}
	max := n + m
	if max > maxEdits {
		max = maxEdits
	}
	off := max + 1
	v := make([]int, 2*max+3)
	// trace[d] keeps the frontier before step d, diagonals -d..d only:
	// a bounded script costs O(maxEdits²) memory at worst.
	var trace [][]int32
	found := -1
	for d := 0; d <= max && found < 0; d++ {
		snap := make([]int32, 2*d+1)
		for i := range snap {
			snap[i] = int32(v[off-d+i])
		}
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		return replaceAll(a, b)
	}
	// Walk back from (n, m) through the frontiers saved before each d.
	var rev []edit
	x, y := n, m
	for d := found; d > 0; d-- {
		prev := func(k int) int { return int(trace[d][k+d]) }
		k := x - y
		var pk int
		if k == -d || (k != d && prev(k-1) < prev(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := prev(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, edit{' ', a[x]})
		}
		if x == px {
			y--
			rev = append(rev, edit{'+', b[y]})
		} else {
			x--
			rev = append(rev, edit{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{' ', a[x]})
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}
