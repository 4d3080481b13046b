package overlay

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
)

// zeroID is git's object id of a missing side.
const zeroID = "0000000000000000000000000000000000000000"

// blobID is git's object id of a blob holding b (sha1, as in a
// repository of the default format).
func blobID(b []byte, present bool) string {
	if !present {
		return zeroID
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// base85 is git's base85 alphabet.
const base85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// writeBinary writes cur as git's "GIT binary patch" literal hunk, which
// `git apply` takes with the full index line before it.
func writeBinary(w *bufio.Writer, cur []byte) {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(cur)
	zw.Close()
	fmt.Fprintf(w, "GIT binary patch\nliteral %d\n", len(cur))
	data := z.Bytes()
	for len(data) > 0 {
		n := min(len(data), 52)
		line := data[:n]
		data = data[n:]
		if n <= 26 {
			w.WriteByte(byte('A' + n - 1))
		} else {
			w.WriteByte(byte('a' + n - 27))
		}
		var sb strings.Builder
		for i := 0; i < n; i += 4 {
			var v uint32
			for j := 0; j < 4; j++ {
				v <<= 8
				if i+j < n {
					v |= uint32(line[i+j])
				}
			}
			var digits [5]byte
			for j := 4; j >= 0; j-- {
				digits[j] = base85[v%85]
				v /= 85
			}
			sb.Write(digits[:])
		}
		w.WriteString(sb.String())
		w.WriteByte('\n')
	}
	w.WriteString("\n")
}
