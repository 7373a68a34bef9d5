// Package images holds the images a run sends as parts of its messages:
// an input of kind image is read once (a file, checked to be an image of a
// kind the providers take and within the spec's size limit; or an http(s)
// URL, sent as it is), and stands in the run's text as a marker naming it
// by digest, ⟦image sha256:HEX⟧ (or ⟦image url:URL⟧). Templates place the
// marker where the image goes; the request encoder splits a message at its
// markers into text and image parts. The journal, the request keys and the
// response cache see only the marker, so a changed image is a changed
// request; the bytes are kept in the run directory under images/, by
// digest, for resume and replay. The path a file was read from is never
// recorded.
package images

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// DefaultMaxBytes is the largest image file accepted when the input sets
// no max_bytes: 5 MB, the least of the major providers' limits.
const DefaultMaxBytes = 5 << 20

// Image is an image a run may send.
type Image struct {
	Digest string // hex SHA-256 of Data
	MIME   string // image/png, image/jpeg, image/gif or image/webp
	Data   []byte
}

// DataURL is the image as a data: URL.
func (im *Image) DataURL() string {
	return "data:" + im.MIME + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
}

// Marker is the text that stands for the image.
func (im *Image) Marker() string { return "⟦image sha256:" + im.Digest + "⟧" }

// URLMarker is the text that stands for an image at a URL.
func URLMarker(u string) string { return "⟦image url:" + u + "⟧" }

// The kinds of image every provider kind takes.
var mimes = map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}

// store holds the images read in this process by digest. Images are
// immutable and named by their content, so one store serves every run.
var store sync.Map

// Put keeps an image for Lookup.
func Put(im *Image) { store.Store(im.Digest, im) }

// Drop forgets every image held, as a new process starts: tests use it to
// read images back from a run directory.
func Drop() { store.Clear() }

// Lookup is the image of a digest read in this process, or nil.
func Lookup(digest string) *Image {
	if v, ok := store.Load(digest); ok {
		return v.(*Image)
	}
	return nil
}

// Read reads an image input's value: an http(s) URL (its marker), or a
// file path (with or without a leading @), read, checked and kept. The
// error says what is wrong with the file without naming the flag.
func Read(value string, maxBytes int) (string, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if u, err := url.Parse(value); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		if strings.ContainsAny(value, "⟦⟧") {
			return "", errors.New("the URL holds ⟦ or ⟧")
		}
		return URLMarker(value), nil
	}
	path := strings.TrimPrefix(value, "@")
	if path == "" {
		return "", errors.New("give a file path or an http(s) URL")
	}
	info, err := os.Stat(path)
	if err != nil {
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("cannot read %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if info.Size() > int64(maxBytes) {
		return "", fmt.Errorf("%s has %d bytes; the spec allows at most %d (max_bytes)", path, info.Size(), maxBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(maxBytes)+1))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, err)
	}
	if len(data) > maxBytes {
		return "", fmt.Errorf("%s has more than %d bytes (max_bytes)", path, maxBytes)
	}
	im, err := FromBytes(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	Put(im)
	return im.Marker(), nil
}

// FromBytes is the image of these bytes, or an error when they are not
// an image of a kind providers take.
func FromBytes(data []byte) (*Image, error) {
	mime := http.DetectContentType(data)
	if _, ok := mimes[mime]; !ok {
		return nil, fmt.Errorf("not an image (PNG, JPEG, GIF or WebP): its content is %s", mime)
	}
	sum := sha256.Sum256(data)
	return &Image{Digest: hex.EncodeToString(sum[:]), MIME: mime, Data: data}, nil
}

var markerRE = regexp.MustCompile(`⟦image (?:sha256:([0-9a-f]{64})|url:(https?://[^⟦⟧\s]+))⟧`)

// Part is a piece of a message's content: text, or an image (URL is a
// data: URL or the image's http(s) URL; MIME and Data are set for a data
// URL).
type Part struct {
	Text    string
	IsImage bool
	// Digest names a held image ("" for one at a URL).
	Digest string
	URL    string
	MIME   string
	Data   []byte
}

// IsMarker reports whether text is one marker and nothing else.
func IsMarker(text string) bool {
	m := markerRE.FindStringIndex(text)
	return m != nil && m[0] == 0 && m[1] == len(text)
}

// Has reports whether text holds a marker.
func Has(text string) bool { return strings.Contains(text, "⟦image ") && markerRE.MatchString(text) }

// Split cuts text at its markers into text and image parts, leaving out
// empty text. A marker of an image this process does not hold stays text
// (an image's marker written by hand, or one whose bytes are missing),
// so nothing but what a run read is sent as an image.
func Split(text string) []Part {
	var out []Part
	last := 0
	add := func(s string) {
		if s == "" {
			return
		}
		if n := len(out); n > 0 && !out[n-1].IsImage {
			out[n-1].Text += s
			return
		}
		out = append(out, Part{Text: s})
	}
	for _, m := range markerRE.FindAllStringSubmatchIndex(text, -1) {
		var p Part
		switch {
		case m[2] >= 0:
			im := Lookup(text[m[2]:m[3]])
			if im == nil {
				continue
			}
			p = Part{IsImage: true, Digest: im.Digest, URL: im.DataURL(), MIME: im.MIME, Data: im.Data}
		default:
			p = Part{IsImage: true, URL: text[m[4]:m[5]]}
		}
		add(text[last:m[0]])
		out = append(out, p)
		last = m[1]
	}
	add(text[last:])
	return out
}

// Digests are the digests of the images text's markers name.
func Digests(text string) []string {
	var out []string
	for _, m := range markerRE.FindAllStringSubmatch(text, -1) {
		if m[1] != "" {
			out = append(out, m[1])
		}
	}
	return out
}

// Dir is where a run directory keeps its images.
func Dir(runDir string) string { return filepath.Join(runDir, "images") }

// Files are the files of the images text names, by path in the run
// directory, for a new run's directory to keep; an image not held is an
// error.
func Files(runDir, text string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, d := range Digests(text) {
		im := Lookup(d)
		if im == nil {
			return nil, fmt.Errorf("image sha256:%s: its bytes are not here (a recorded run's image: its run directory's images/ lacks it)", d)
		}
		out[filepath.Join(Dir(runDir), d+mimes[im.MIME])] = im.Data
	}
	return out, nil
}

// Save writes the images text names into the run directory (once each).
func Save(runDir, text string) error {
	for _, d := range Digests(text) {
		im := Lookup(d)
		if im == nil {
			return fmt.Errorf("image sha256:%s is not held (read it again: give the input its file)", d)
		}
		path := filepath.Join(Dir(runDir), d+mimes[im.MIME])
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if err := os.MkdirAll(Dir(runDir), 0o755); err != nil {
			return err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, im.Data, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

// LoadDir reads the images a run directory (or the directory of a
// journal file) keeps, checking each against
// its digest, so that a resume or a replay of the run sends them again.
func LoadDir(runDir string) error {
	if info, err := os.Stat(runDir); err == nil && !info.IsDir() {
		runDir = filepath.Dir(runDir) // a recording named by its journal
	}
	entries, err := os.ReadDir(Dir(runDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		digest := strings.TrimSuffix(name, filepath.Ext(name))
		if !e.Type().IsRegular() || len(digest) != 64 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(Dir(runDir), name))
		if err != nil {
			return err
		}
		im, err := FromBytes(data)
		if err != nil || im.Digest != digest {
			return fmt.Errorf("%s: the image does not match its digest", filepath.Join(Dir(runDir), name))
		}
		Put(im)
	}
	return nil
}

// Input is an image input of a run: its name and its value as the run
// holds it (markers).
type Input struct{ Name, Text string }

// Stager queues the files of a new run's directory (rundir.Batch).
type Stager interface {
	Folder(path string)
	Stage(path string, data []byte)
}

// Stage queues the images the run's image inputs name into the new run's
// directory (images/, by digest), so that a resume or a replay of the run
// sends the same bytes; the paths they were read from are not kept. An
// image input whose bytes are not held (a recorded run's, whose directory
// lacks them) stops the run before it starts.
func Stage(runDir string, inputs []Input, files Stager) error {
	made := false
	for _, in := range inputs {
		fs, err := Files(runDir, in.Text)
		if err != nil {
			return fmt.Errorf("input %s: %w", in.Name, err)
		}
		if len(fs) > 0 && !made {
			if err := os.MkdirAll(Dir(runDir), 0o755); err != nil {
				return err
			}
			files.Folder(Dir(runDir))
			made = true
		}
		for _, p := range slices.Sorted(maps.Keys(fs)) {
			files.Stage(p, fs[p])
		}
	}
	return nil
}
