package journal

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Redacted replaces a secret in redacted text.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest secret a [Redactor] acts on: shorter strings
// would match ordinary text everywhere and make the journal useless.
const minSecretLen = 4

// Redactor replaces known secrets (API keys and the like) with [Redacted].
// In JSON payloads a string is matched on its decoded text, so a secret
// spelled with \u escapes is still found, and a number containing a secret
// becomes the string [Redacted].
//
// The runtime never puts keys in events; the Redactor is defence in depth
// against a key that a server echoes back reaching disk. A nil *Redactor
// redacts nothing.
type Redactor struct {
	secrets [][]byte
	strs    []string // the secrets again, to search strings without copying them
	// plain is set when no secret holds a character that JSON writes as a
	// two-character escape (quote, backslash, slash, control characters).
	// Then in JSON without \u escapes a secret is in a string's decoded text
	// only if it is in its encoded text too, and a plain search suffices.
	plain bool
}

// NewRedactor returns a Redactor for the given secrets. Secrets shorter than
// four bytes are ignored.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{plain: true}
	for _, s := range secrets {
		if len(s) < minSecretLen {
			continue
		}
		if !slices.Contains(r.strs, s) {
			r.secrets = append(r.secrets, []byte(s))
			r.strs = append(r.strs, s)
			if strings.ContainsFunc(s, func(c rune) bool { return c < 0x20 || c == '"' || c == '\\' || c == '/' }) {
				r.plain = false
			}
		}
	}
	return r
}

func (r *Redactor) active() bool { return r != nil && len(r.secrets) > 0 }

// Redact returns s with every occurrence of every secret replaced by
// [Redacted]. Overlapping or adjacent occurrences become one [Redacted], so no
// byte of any occurrence survives.
func (r *Redactor) Redact(s string) string {
	if !r.active() || !slices.ContainsFunc(r.strs, func(sec string) bool { return strings.Contains(s, sec) }) {
		return s
	}
	b := []byte(s)
	if out, changed := r.redactBytes(b); changed {
		return string(out)
	}
	return s
}

// redactBytes returns b with secrets replaced and whether there were any.
func (r *Redactor) redactBytes(b []byte) ([]byte, bool) {
	var spans [][2]int
	for _, sec := range r.secrets {
		// Step by one byte so overlapping occurrences ("aaaa" in "aaaaa")
		// are all covered.
		for off := 0; ; {
			i := bytes.Index(b[off:], sec)
			if i < 0 {
				break
			}
			spans = append(spans, [2]int{off + i, off + i + len(sec)})
			off += i + 1
		}
	}
	if len(spans) == 0 {
		return b, false
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	out := make([]byte, 0, len(b))
	last := 0
	for i := 0; i < len(spans); {
		start, end := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] <= end; i++ {
			end = max(end, spans[i][1])
		}
		out = append(out, b[last:start]...)
		out = append(out, Redacted...)
		last = end
	}
	return append(out, b[last:]...), true
}

func (r *Redactor) containsAny(b []byte) bool {
	for _, sec := range r.secrets {
		if bytes.Contains(b, sec) {
			return true
		}
	}
	return false
}

// redactJSON redacts secrets in valid, compact JSON and keeps it valid. It
// works on tokens rather than raw bytes so that a match can never break the
// JSON: string contents are compared after unescaping (a secret written with
// \u escapes is still found) and re-encoded, and a number that contains a
// secret becomes the string [Redacted]. Literals (true, false, null) and
// punctuation cannot carry a secret and are left alone.
func (r *Redactor) redactJSON(data []byte) []byte {
	if !r.active() || len(data) == 0 {
		return data
	}
	// Without a backslash every string is literal text, so a plain search
	// tells whether there is anything to do; so it does for plain secrets
	// when no escape is a \u one. Model replies are full of \n: without the
	// second case every event holding one would be decoded string by string.
	if !r.containsAny(data) && (bytes.IndexByte(data, '\\') < 0 || r.plain && !bytes.Contains(data, []byte(`\u`))) {
		return data
	}
	var out []byte
	last := 0
	for i := 0; i < len(data); {
		switch c := data[i]; {
		case c == '"':
			end := stringEnd(data, i)
			if repl, changed := r.redactStringToken(data[i:end]); changed {
				out = append(out, data[last:i]...)
				out = append(out, repl...)
				last = end
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end := i + 1
			for end < len(data) && isNumberByte(data[end]) {
				end++
			}
			if r.containsAny(data[i:end]) {
				out = append(out, data[last:i]...)
				out = append(out, `"`+Redacted+`"`...)
				last = end
			}
			i = end
		default:
			i++
		}
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// redactStringToken redacts one JSON string token, quotes included.
func (r *Redactor) redactStringToken(tok []byte) ([]byte, bool) {
	if len(tok) < 2 || tok[len(tok)-1] != '"' {
		// Unterminated: not JSON the encoder produces, but never panic.
		return r.redactBytes(tok)
	}
	body := tok[1 : len(tok)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		red, changed := r.redactBytes(body)
		if !changed {
			return tok, false
		}
		// Redacted holds no character that needs escaping.
		return append(append(append(make([]byte, 0, len(red)+2), '"'), red...), '"'), true
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		// Unreachable for JSON the encoder produced; fall back to the raw
		// text rather than letting a secret through.
		red, changed := r.redactBytes(body)
		if !changed {
			return tok, false
		}
		return appendString(nil, string(red)), true
	}
	red, changed := r.redactBytes([]byte(s))
	if !changed {
		return tok, false
	}
	return appendString(nil, string(red)), true
}

// stringEnd returns the index just past the string token starting at data[i].
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// RedactJSON returns compact JSON with every secret in its strings and
// numbers replaced by [Redacted]; it stays valid JSON. It returns data
// itself when nothing needs replacing.
func (r *Redactor) RedactJSON(data []byte) []byte { return r.redactJSON(data) }

// Active reports whether the Redactor has any secret to look for.
func (r *Redactor) Active() bool { return r.active() }
