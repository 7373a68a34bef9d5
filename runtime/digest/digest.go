// Package digest names texts and prompts by their SHA-256, as the journal
// and resume compare them, without copying each string to the heap.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/debate-runner/runner/nodes/kit"
)

// hashBufs are scratch buffers for hashing strings: sha256 takes bytes, and
// converting a prompt or a reply to bytes would copy it to the heap on every
// call.
var hashBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxHashBuf bounds the scratch buffer kept for reuse, so one huge prompt
// does not pin its size for the rest of the process.
const maxHashBuf = 1 << 20

// Strings returns the SHA-256 of the concatenation of parts.
func Strings(parts ...string) [sha256.Size]byte {
	bp := hashBufs.Get().(*[]byte)
	b := (*bp)[:0]
	for _, p := range parts {
		b = append(b, p...)
	}
	sum := sha256.Sum256(b)
	if cap(b) <= maxHashBuf {
		*bp = b
		hashBufs.Put(bp)
	}
	return sum
}

// Prompt identifies a prompt: the SHA-256 of each message's role and
// content, each followed by a NUL byte.
func Prompt(ms []kit.ChatMessage) string {
	bp := hashBufs.Get().(*[]byte)
	b := (*bp)[:0]
	for _, m := range ms {
		b = append(b, m.Role...)
		b = append(b, 0)
		b = append(b, m.Content...)
		b = append(b, 0)
	}
	sum := sha256.Sum256(b)
	if cap(b) <= maxHashBuf {
		*bp = b
		hashBufs.Put(bp)
	}
	return hex.EncodeToString(sum[:])
}
