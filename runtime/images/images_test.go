package images

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// join is the text parts and the images' markers put back together.
func join(parts []Part) string {
	var b strings.Builder
	for _, p := range parts {
		switch {
		case !p.IsImage:
			b.WriteString(p.Text)
		case p.Digest != "":
			b.WriteString("⟦image sha256:" + p.Digest + "⟧")
		default:
			b.WriteString(URLMarker(p.URL))
		}
	}
	return b.String()
}

// A tiny GIF: the smallest image FromBytes takes.
var gif = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

// Split loses nothing: put back together, its parts are the text; no two
// text parts follow each other and none is empty; a held image's marker
// is an image part with its data URL, a URL's an image part with the URL,
// and a marker of an image not held stays text.
func FuzzSplit(f *testing.F) {
	im, err := FromBytes(gif)
	if err != nil {
		f.Fatal(err)
	}
	Put(im)
	f.Add("look: " + im.Marker() + " and " + URLMarker("https://example.com/a.png") + ".")
	f.Add("⟦image sha256:" + strings.Repeat("0", 64) + "⟧")
	f.Add("⟦image url:http://x⟧⟦image ")
	f.Fuzz(func(t *testing.T, text string) {
		parts := Split(text)
		if join(parts) != text {
			t.Fatalf("Split(%q) put back is %q", text, join(parts))
		}
		for i, p := range parts {
			if !p.IsImage && (p.Text == "" || i > 0 && !parts[i-1].IsImage) {
				t.Fatalf("Split(%q): text part %d empty or after text", text, i)
			}
			if p.IsImage && p.Digest != "" && (Lookup(p.Digest) == nil || !strings.HasPrefix(p.URL, "data:image/gif;base64,")) {
				t.Fatalf("Split(%q): image part %d %+v", text, i, p)
			}
		}
	})
}

// For generated texts of pieces, markers of held images and URLs, and
// markers of images not held, Split gives the pieces in order with an
// image part for each held image and URL and the rest as text.
func TestSplitFindsEveryImage(t *testing.T) {
	im, _ := FromBytes(gif)
	Put(im)
	rng := rand.New(rand.NewPCG(38, 12))
	for range 300 {
		var b strings.Builder
		var want []string // "img", "url" or text
		for range rng.IntN(6) {
			switch rng.IntN(4) {
			case 0:
				b.WriteString(im.Marker())
				want = append(want, "img")
			case 1:
				b.WriteString(URLMarker("https://example.com/x.png"))
				want = append(want, "url")
			case 2:
				s := "⟦image sha256:" + strings.Repeat("ab", 32) + "⟧" // not held
				b.WriteString(s)
				want = appendText(want, s)
			default:
				s := []string{"a", "é ", "\n", "⟦", "image"}[rng.IntN(5)]
				b.WriteString(s)
				want = appendText(want, s)
			}
		}
		parts := Split(b.String())
		if len(parts) != len(want) {
			t.Fatalf("Split(%q): %d parts, want %d", b.String(), len(parts), len(want))
		}
		for i, p := range parts {
			switch want[i] {
			case "img":
				if !p.IsImage || p.Digest != im.Digest || p.URL != im.DataURL() {
					t.Fatalf("part %d: %+v, want the image", i, p)
				}
			case "url":
				if !p.IsImage || p.URL != "https://example.com/x.png" {
					t.Fatalf("part %d: %+v, want the URL", i, p)
				}
			default:
				if p.IsImage || p.Text != want[i] {
					t.Fatalf("part %d: %+v, want text %q", i, p, want[i])
				}
			}
		}
	}
}

func appendText(want []string, s string) []string {
	if n := len(want); n > 0 && want[n-1] != "img" && want[n-1] != "url" {
		want[n-1] += s
		return want
	}
	return append(want, s)
}
