package value

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// CacheBreakFunc is the template helper that marks a prompt's cache split:
// {{cacheBreak}} prints nothing into the prompt, and a model with
// prompt_cache: breakpoints sends the message it stands in as two text
// parts, the first (everything before the mark) carrying a cache
// breakpoint. Validate checks it stands alone, once per message.
const CacheBreakFunc = "cacheBreak"

// CacheBreak is the mark a rendered prompt carries where {{cacheBreak}}
// stood, from rendering until the model call takes it out (SplitCacheBreak).
// Two noncharacters enclose it: text does not hold them, and a text that
// does is not taken for a mark (see SealCacheBreaks).
const CacheBreak = "\uFDD0cache-break\uFDD1"

// cacheBreakForged replaces a CacheBreak that a prompt's data held (an
// input, a reply), so that only the helper can split a message.
const cacheBreakForged = "\uFFFDcache-break\uFFFD"

// cacheBreakDraft is what the helper prints: a mark no data can hold, as
// it differs in every process. Rendering turns it into CacheBreak
// (SealCacheBreaks), which a thread's journaled prompt may keep.
var cacheBreakDraft = func() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return "\uFDD0" + hex.EncodeToString(b) + "\uFDD1"
}()

func cacheBreak() string { return cacheBreakDraft }

// SealCacheBreaks turns the marks {{cacheBreak}} printed into s into
// CacheBreak, after defusing any CacheBreak the data put there. Call it on
// every rendered prompt.
func SealCacheBreaks(s string) string {
	if !strings.Contains(s, "\uFDD0") {
		return s
	}
	s = strings.ReplaceAll(s, CacheBreak, cacheBreakForged)
	return strings.ReplaceAll(s, cacheBreakDraft, CacheBreak)
}

// SplitCacheBreak takes the CacheBreak marks out of s and says where the
// first stood (a byte offset into the text returned), -1 when s has none.
// A message has one split point: a later mark is dropped.
func SplitCacheBreak(s string) (string, int) {
	i := strings.Index(s, CacheBreak)
	if i < 0 {
		return s, -1
	}
	return s[:i] + strings.ReplaceAll(s[i+len(CacheBreak):], CacheBreak, ""), i
}
