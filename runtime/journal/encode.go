package journal

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// appendLine encodes one event as a journal line, newline included. data must
// be compact, valid JSON (or empty for none). The envelope is written by hand
// rather than with encoding/json because it runs under the writer's lock and
// would otherwise allocate for every event.
func appendLine(dst []byte, seq int64, t time.Time, typ, key string, data []byte) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","type":`...)
	dst = appendString(dst, typ)
	if key != "" {
		dst = append(dst, `,"key":`...)
		dst = appendString(dst, key)
	}
	if len(data) > 0 {
		dst = append(dst, `,"data":`...)
		dst = append(dst, data...)
	}
	return append(dst, "}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Control characters, quotes and
// backslashes are escaped, as are U+2028 and U+2029 (as encoding/json does);
// invalid UTF-8 becomes U+FFFD. HTML characters are left alone, matching the
// payload encoder, so the journal stays readable.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
