// Package tools implements the functions agents may call during a node:
// search_history over the messages an agent may see, and read_file and
// list_files confined to one directory. A bad call yields an error text for
// the model, never a failure of the run.
package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/regular"
	"github.com/debate-runner/runner/nodes/kit"
)

// Names of the tools.
const (
	SearchHistory = "search_history"
	ReadFile      = "read_file"
	ListFiles     = "list_files"
)

// MaxFileBytes bounds what read_file returns.
const MaxFileBytes = 64 << 10

// Definitions returns the tool definitions sent to the model.
func Definitions(names []string) []kit.Tool {
	var out []kit.Tool
	for _, n := range names {
		switch n {
		case SearchHistory:
			out = append(out, kit.Tool{Name: n, Description: "Search the debate so far (messages you can see) for a word or phrase, case-insensitively.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Text to look for."},"limit":{"type":"integer","description":"Most matches to return (default 5)."}},"required":["query"]}`)})
		case ReadFile:
			out = append(out, kit.Tool{Name: n, Description: "Read a text file from the context directory.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Path relative to the context directory."}},"required":["path"]}`)})
		case ListFiles:
			out = append(out, kit.Tool{Name: n, Description: "List files in a folder of the context directory.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Folder relative to the context directory (default: its root)."}}}`)})
		}
	}
	return out
}

// Env is what tools may use.
type Env struct {
	// Visible are the messages the calling agent may see.
	// They are shared with the run: read them, never change them.
	Visible []*value.Message
	// Dir is the context directory; file tools refuse to work without it.
	Dir string
	// Snapshot, when set, answers the file tools instead of Dir (see
	// Snapshot).
	Snapshot *Snapshot
	// MCP serves the tools of MCP servers, nil when the run has none.
	MCP MCP
	// read is told about each file read_file reads (see Run).
	read func(kit.FileRead)
}

// Run runs a tool for the model: its result text ("error: ..." when the
// call failed, for the model to read) and the context files it read. A
// cancelled ctx stops it before it reads anything.
func Run(ctx context.Context, env Env, name, arguments string) kit.ToolResult {
	if err := ctx.Err(); err != nil {
		return kit.ToolResult{Text: "error: " + err.Error()}
	}
	if isMCP(name) {
		if env.MCP == nil {
			return kit.ToolResult{Text: fmt.Sprintf("error: unknown tool %q", name)}
		}
		out, err := env.MCP.Call(ctx, name, arguments)
		return kit.ToolResult{Text: out, Err: err}
	}
	var files []kit.FileRead
	env.read = func(f kit.FileRead) { files = append(files, f) }
	out, err := Call(env, name, arguments)
	if err != nil {
		out = "error: " + err.Error()
	}
	return kit.ToolResult{Text: out, Files: files}
}

// Digest reads a context file as read_file does and returns what a tool
// call that read it would record, to tell whether it changed since.
func Digest(dir, rel string) (kit.FileRead, error) {
	full, err := confine(dir, rel)
	if err != nil {
		return kit.FileRead{}, err
	}
	_, f, err := readRegular(contextRoot(dir), full, rel)
	return f, err
}

// Call runs a tool and returns its result text. Errors are returned as
// text too ("error: ..."), for the model to read.
func Call(env Env, name, arguments string) (string, error) {
	var args map[string]any
	if strings.TrimSpace(arguments) == "" {
		arguments = "{}"
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return "", fmt.Errorf("arguments are not a JSON object: %v", err)
	}
	switch name {
	case SearchHistory:
		q, _ := args["query"].(string)
		if strings.TrimSpace(q) == "" {
			return "", errors.New(`"query" is required`)
		}
		limit := 5
		if l, ok := args["limit"].(float64); ok && l >= 1 {
			limit = min(int(l), 20)
		}
		return search(env.Visible, q, limit), nil
	case ReadFile, ListFiles:
		p, _ := args["path"].(string)
		if env.Snapshot != nil {
			return env.Snapshot.answer(name, p)
		}
		return fileTool(env, name, p)
	}
	return "", fmt.Errorf("unknown tool %q", name)
}

// fileTool runs read_file or list_files on path p of env.Dir.
func fileTool(env Env, name, p string) (string, error) {
	dir := env.Dir
	switch name {
	case ReadFile:
		full, err := confine(dir, p)
		if err != nil {
			return "", err
		}
		text, read, err := readRegular(contextRoot(dir), full, p)
		if err != nil {
			return "", err
		}
		if env.read != nil {
			env.read(read)
		}
		return text, nil
	case ListFiles:
		full, err := confine(dir, p)
		if err != nil {
			return "", err
		}
		entries, err := os.ReadDir(full)
		if err != nil {
			return "", fmt.Errorf("cannot list %q: %v", p, unwrap(err))
		}
		var lines []string
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() {
				n += "/"
			} else if e.Type()&fs.ModeSymlink != 0 {
				n += " (link)"
			}
			lines = append(lines, n)
		}
		sort.Strings(lines)
		if len(lines) == 0 {
			return "(empty folder)", nil
		}
		return strings.Join(lines, "\n"), nil
	}
	return "", fmt.Errorf("unknown tool %q", name)
}

// readRegular reads what read_file shows of a file: at most MaxFileBytes
// of a regular file. Anything else is refused: a FIFO would block the run
// until someone wrote to it, a device could stream forever. The file is
// opened without waiting (O_NONBLOCK where the platform has it) and checked
// once open, so a file swapped for a FIFO after the check cannot block.
// A file with more than one name (hard links) is read only when every name
// is under root: a hard link looks like any file by its path, but its
// other name may be outside the folder.
func readRegular(root, full, p string) (string, kit.FileRead, error) {
	info, err := os.Stat(full)
	if err != nil {
		return "", kit.FileRead{}, fmt.Errorf("cannot read %q: %v", p, unwrap(err))
	}
	if info.IsDir() {
		return "", kit.FileRead{}, fmt.Errorf("%q is a folder; use list_files", p)
	}
	if !info.Mode().IsRegular() {
		return "", kit.FileRead{}, fmt.Errorf("%q is not a regular file (%s); only regular files can be read", p, regular.Kind(info.Mode()))
	}
	f, info, err := regular.Open(full)
	if err != nil {
		var nr *regular.NotRegularError
		if errors.As(err, &nr) {
			return "", kit.FileRead{}, fmt.Errorf("%q is not a regular file (%s); only regular files can be read", p, regular.Kind(nr.Mode))
		}
		return "", kit.FileRead{}, fmt.Errorf("cannot read %q: %v", p, unwrap(err))
	}
	defer f.Close()
	if n := regular.Links(f, info); n > 1 && !linksInside(root, info, n) {
		return "", kit.FileRead{}, fmt.Errorf("%q has %d names (hard links) and not all are in the context directory; a hard link may lead out of it, so it is not read", p, n)
	}
	buf := make([]byte, MaxFileBytes+1)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", kit.FileRead{}, fmt.Errorf("cannot read %q: %v", p, unwrap(err))
	}
	sum := sha256.Sum256(buf[:n])
	read := kit.FileRead{Path: filepath.ToSlash(filepath.Clean(p)), SHA256: hex.EncodeToString(sum[:]), Size: info.Size()}
	text := string(buf[:min(n, MaxFileBytes)])
	if n > MaxFileBytes {
		text += fmt.Sprintf("\n[truncated: the file is %d bytes; first %d shown]", info.Size(), MaxFileBytes)
	}
	return text, read, nil
}

// maxLinkScan bounds the entries linksInside looks at: a folder larger
// than that cannot vouch for a hard-linked file in it.
const maxLinkScan = 100_000

// linksInside reports whether all n names of the file info describes are
// under root (symbolic links are not followed: a name is where it is).
func linksInside(root string, info fs.FileInfo, n uint64) bool {
	var found uint64
	seen := 0
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if seen++; seen > maxLinkScan {
			return filepath.SkipAll
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if li, err := os.Lstat(path); err == nil && os.SameFile(li, info) {
			if found++; found >= n {
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found >= n
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// confine resolves p inside dir and refuses anything that leaves it: ".."
// segments, absolute paths, and symbolic links pointing outside.
func confine(dir, p string) (string, error) {
	if dir == "" {
		return "", errors.New("no context directory was given to this run (--context DIR)")
	}
	clean, err := relative(p)
	if err != nil {
		return "", err
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("context directory: %v", unwrap(err))
	}
	full := filepath.Join(root, clean)
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("cannot open %q: %v", p, unwrap(err))
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%q leaves the context directory", p)
	}
	return real, nil
}

// contextRoot is the context directory with its links resolved, as
// confine compares paths against.
func contextRoot(dir string) string {
	if root, err := filepath.EvalSymlinks(dir); err == nil {
		return root
	}
	return dir
}

// relative checks that p is a relative path that stays inside the context
// directory as written, and returns it cleaned.
func relative(p string) (string, error) {
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", fmt.Errorf("%q is an absolute path; give a path relative to the context directory", p)
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q leaves the context directory", p)
	}
	return clean, nil
}

func search(msgs []*value.Message, query string, limit int) string {
	q := strings.ToLower(query)
	var hits []string
	for i := len(msgs) - 1; i >= 0 && len(hits) < limit; i-- {
		m := msgs[i]
		lc := strings.ToLower(m.Content)
		at := strings.Index(lc, q)
		if at < 0 {
			continue
		}
		lo, hi := max(0, at-120), min(len(m.Content), at+len(q)+120)
		for lo > 0 && !isBoundary(m.Content[lo]) {
			lo--
		}
		for hi < len(m.Content) && !isBoundary(m.Content[hi]) {
			hi++
		}
		where := fmt.Sprintf("[%s] %s", m.ID, m.From)
		if m.To != "" {
			where += " to " + m.To
		}
		if m.Record != "" {
			where += " (" + m.Record
			if m.Round > 0 {
				where += fmt.Sprintf(", round %d", m.Round)
			}
			where += ")"
		}
		hits = append(hits, where+": ..."+strings.TrimSpace(m.Content[lo:hi])+"...")
	}
	if len(hits) == 0 {
		return fmt.Sprintf("no message contains %q", query)
	}
	return strings.Join(hits, "\n\n")
}

func isBoundary(b byte) bool {
	return b == ' ' || b == '\n' || b < 0x80 && b != 0 && (b == '.' || b == ',')
}

// Merge joins two lists of tool names, each name once, in order.
func Merge(a, b []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range append(append([]string(nil), a...), b...) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Complete makes a call and, while the model asks for tools, runs
// them and calls again, up to limit tool calls; then it asks for an answer
// without tools. It returns the final reply and the conversation so far.
func Complete(ctx context.Context, h interface {
	kit.Caller
	kit.ToolRunner
}, call kit.Call, env Env, limit int) (kit.Reply, []kit.ChatMessage, error) {
	base := call.Key
	msgs := append([]kit.ChatMessage(nil), call.Messages...)
	used := 0
	for round := 0; ; round++ {
		c := call
		c.Messages = msgs
		if round > 0 {
			c.Key = fmt.Sprintf("%s/tool%d", base, round)
		}
		if used >= limit {
			c.Tools = nil
		}
		reply, err := h.Complete(ctx, c)
		if err != nil {
			return reply, msgs, err
		}
		if len(reply.ToolCalls) == 0 || len(c.Tools) == 0 {
			return reply, msgs, nil
		}
		msgs = append(msgs, kit.ChatMessage{Role: "assistant", Content: reply.Content, ToolCalls: reply.ToolCalls})
		for _, tc := range reply.ToolCalls {
			used++
			over := used > limit
			result, err := h.RunTool(ctx, c.Key, call.Agent.ID, tc, func(ctx context.Context) kit.ToolResult {
				if over {
					return kit.ToolResult{Text: fmt.Sprintf("error: the limit of %d tool calls for this reply is reached; answer now", limit)}
				}
				return Run(ctx, env, tc.Name, tc.Arguments)
			})
			if err != nil {
				return reply, msgs, err
			}
			msgs = append(msgs, kit.ChatMessage{Role: "tool", ToolCallID: tc.ID, Name: tc.Name, Content: result})
		}
	}
}
