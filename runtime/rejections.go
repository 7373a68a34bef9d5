package runtime

import (
	"fmt"
	"strconv"

	"github.com/debate-runner/runner/runtime/result"
)

// noteReply remembers the text of a reply this node received, by call key.
func (h *host) noteReply(key, content string) {
	h.repliesMu.Lock()
	if h.replies == nil {
		h.replies = map[string]string{}
	}
	h.replies[key] = content
	h.repliesMu.Unlock()
}

// noteRejection keeps a reply a conversation rejected, with the reasons,
// for result.json and the report. A resumed run notes its rejections again
// as it walks the flow, so the list is whole after a resume too.
func (h *host) noteRejection(key string, data any) {
	m, _ := data.(map[string]any)
	h.repliesMu.Lock()
	content := h.replies[key]
	delete(h.replies, key)
	h.repliesMu.Unlock()
	rej := result.Rejection{Key: key, Node: h.node.ID, Goal: h.scope.Goal.ID, Round: h.scope.Round, Content: content}
	if m != nil {
		rej.Agent = fmt.Sprint(m["speaker"])
		rej.Reasons = fmt.Sprint(m["reasons"])
		rej.Attempt, _ = strconv.Atoi(fmt.Sprint(m["attempt"]))
	}
	r := h.run
	r.mu.Lock()
	r.rejections = append(r.rejections, rej)
	r.mu.Unlock()
}
