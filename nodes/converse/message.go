package converse

import (
	"fmt"
	"strings"

	"github.com/debate-runner/runner/internal/tags"
	"github.com/debate-runner/runner/spec"
)

// Tag names of the message scaffold. They are the names the chain-of-debate
// recordings use, so recorded replies parse as they are.
const (
	TagSpeakingTo         = "SpeakingTo"
	TagWhisper            = "Whisper"
	TagContent            = "Content"
	TagPrivateThoughts    = "PrivateThoughts"
	TagPrivatePredictions = "PrivatePredictions"
	TagVerdict            = "Verdict"
	TagVerdictReasoning   = "VerdictReasoning"
	TagWithdrawn          = "Withdrawn"
)

var scaffold = []string{TagSpeakingTo, TagWhisper, TagContent, TagPrivateThoughts, TagPrivatePredictions, TagVerdict, TagVerdictReasoning, TagWithdrawn}

// Parsed is a turn as read from a reply.
type Parsed struct {
	To        string // agent id, "" for everyone
	Whisper   bool
	Content   string
	Private   string
	Verdict   string
	Reasoning string
	Withdrawn bool
	// HasWithdrawn is set when the reply carried a Withdrawn tag.
	HasWithdrawn bool
}

// Rejection explains why a reply cannot be accepted as a turn.
type Rejection struct{ Reasons []string }

func (r *Rejection) Error() string { return strings.Join(r.Reasons, "; ") }

// ParseMessage reads a tag-scaffolded reply and checks it against the rules
// of the conversation: known addressee (a participant, All, or the time
// keeper, which makes the message public), whisper with an addressee,
// verdict from the options, reasoning with a verdict, withdrawal only with a
// verdict given now or earlier, and a verdict now when mustDecide. All
// problems are reported together so one repair can fix them all.
func ParseMessage(reply string, agents []*spec.AgentPlan, self string, options []string, needReasoning, hadVerdict, mustDecide bool) (Parsed, error) {
	res := tags.Parse(reply, scaffold...)
	var p Parsed
	var reasons []string
	toKeeper := false // addressed to the time keeper
	get := func(name string) (string, bool) {
		f, ok := res.Get(name)
		return strings.TrimSpace(f.Value), ok
	}
	if c, ok := get(TagContent); ok {
		p.Content = c
	} else {
		p.Content = strings.TrimSpace(res.Text)
	}
	if p.Content == "" {
		reasons = append(reasons, "the message has no content: put what you say inside <Content>...</Content>")
	}
	var private []string
	for _, name := range []string{TagPrivateThoughts, TagPrivatePredictions} {
		for _, f := range res.All(name) {
			if v := strings.TrimSpace(f.Value); v != "" {
				private = append(private, v)
			}
		}
	}
	p.Private = strings.Join(private, "\n\n")
	if to, ok := get(TagSpeakingTo); ok && to != "" && !toEveryone(to) {
		id, err := ResolveAgent(to, agents)
		switch {
		case err != nil && toTimeKeeper(to):
			// The reply keeps its addressee; the time keeper's messages are
			// public, so a reply to it is public too (never a whisper).
			p.To, toKeeper = TimeKeeper, true
		case err != nil:
			reasons = append(reasons, err.Error())
		case id == self:
			reasons = append(reasons, "you cannot speak to yourself: use <SpeakingTo>All</SpeakingTo> or name another participant")
		default:
			p.To = id
		}
	}
	if w, ok := get(TagWhisper); ok && w != "" {
		b, err := tags.ParseBool(w)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("<Whisper> must be true or false, not %q", w))
		}
		p.Whisper = b && !toKeeper
		switch {
		case b && toKeeper:
			reasons = append(reasons, "a whisper needs one addressee among the participants in <SpeakingTo> (the time keeper reads only public messages)")
		case b && p.To == "":
			reasons = append(reasons, "a whisper needs one addressee in <SpeakingTo>")
		}
	}
	if v, ok := get(TagVerdict); ok && v != "" && !isPlaceholder(v) {
		opt, found := matchOption(v, options)
		switch {
		case len(options) == 0:
			reasons = append(reasons, "this conversation takes no verdicts; leave out <Verdict>")
		case !found:
			reasons = append(reasons, fmt.Sprintf("%q is not a valid verdict: use exactly one of %s", v, strings.Join(options, ", ")))
		default:
			p.Verdict = opt
		}
	}
	if r, ok := get(TagVerdictReasoning); ok {
		p.Reasoning = r
	}
	if p.Verdict != "" && needReasoning && p.Reasoning == "" {
		reasons = append(reasons, "a verdict needs its reasons in <VerdictReasoning>")
	}
	if w, ok := get(TagWithdrawn); ok && w != "" {
		b, err := tags.ParseBool(w)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("<Withdrawn> must be true or false, not %q", w))
		}
		p.Withdrawn, p.HasWithdrawn = b, true
		if b && p.Verdict == "" && !hadVerdict {
			reasons = append(reasons, "you can only withdraw after giving a verdict: add <Verdict> and <VerdictReasoning>")
		}
	}
	if mustDecide && p.Verdict == "" && !hadVerdict {
		reasons = append(reasons, fmt.Sprintf("you must give your verdict now: one of %s, with <VerdictReasoning>", strings.Join(options, ", ")))
	}
	if len(reasons) > 0 {
		return p, &Rejection{Reasons: reasons}
	}
	return p, nil
}

// toEveryone reports whether an addressee means the whole conversation.
func toEveryone(to string) bool {
	switch addressee(to) {
	case "all", "everyone", "everybody":
		return true
	}
	return false
}

// toTimeKeeper reports whether an addressee is the time keeper, which
// speaks in a conversation without being one of its participants.
func toTimeKeeper(to string) bool {
	switch addressee(to) {
	case "timekeeper", "time keeper", "time_keeper":
		return true
	}
	return false
}

// addressee normalises an addressee for the checks above: "[All]" is "all".
func addressee(to string) string {
	return strings.ToLower(strings.Join(strings.Fields(strings.Trim(to, "[]@ ")), " "))
}

// isPlaceholder spots a copied scaffold such as "A | B | C" or "[verdict]",
// which models write when they have no verdict yet.
func isPlaceholder(v string) bool {
	return strings.Contains(v, "|") || strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]")
}

// matchOption finds the option a verdict names, ignoring case, quotes,
// Markdown emphasis and a trailing full stop, and reading spaces and hyphens
// as underscores ("Good fit" is GOOD_FIT): models write options the way they
// would say them.
func matchOption(v string, options []string) (string, bool) {
	clean := optionKey(strings.Trim(strings.TrimSpace(v), "\"'`*. "))
	for _, o := range options {
		if strings.EqualFold(clean, optionKey(o)) {
			return o, true
		}
	}
	return "", false
}

// optionKey is an option with spaces, hyphens and underscores read alike.
func optionKey(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '-' || r == '_' }), "_")
}

// ResolveAgent finds the participant an addressee names: by id or name,
// ignoring case, or by a unique first word of a name ("Marcus" for "Marcus
// Truth").
func ResolveAgent(name string, agents []*spec.AgentPlan) (string, error) {
	n := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), "@"))
	for _, a := range agents {
		if strings.EqualFold(a.ID, n) || strings.EqualFold(a.Name, n) {
			return a.ID, nil
		}
	}
	var hits []string
	for _, a := range agents {
		for _, w := range strings.Fields(a.Name) {
			if strings.EqualFold(strings.Trim(w, ".,"), n) {
				hits = append(hits, a.ID)
				break
			}
		}
	}
	if len(hits) == 1 {
		return hits[0], nil
	}
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name
	}
	return "", fmt.Errorf("<SpeakingTo> %q names nobody in this conversation: use All or one of %s", name, strings.Join(names, ", "))
}
