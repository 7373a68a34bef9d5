package converse_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes/converse"
	"github.com/debate-runner/runner/spec"
)

var (
	trio = []*spec.AgentPlan{
		{ID: "ana", Name: "Ana Lima"},
		{ID: "bo", Name: "Bo Chen"},
		{ID: "cy", Name: "Cy Marlowe Tate"},
	}
	voteOptions = []string{"YES", "NO", "MAYBE", "GOOD_FIT"}
)

// TestParseMessage is the validation table of a turn: what is read from a
// reply, and every rule that rejects one, with the reason the speaker gets.
func TestParseMessage(t *testing.T) {
	type check struct {
		hadVerdict, mustDecide, optional bool
		options                          []string
	}
	tests := []struct {
		name    string
		reply   string
		ctx     check
		want    converse.Parsed
		reasons []string // substrings, one per expected reason; nil: accepted
	}{
		{
			name:  "full message",
			reply: "<SpeakingTo>bo</SpeakingTo><Whisper>true</Whisper><PrivateThoughts>p1</PrivateThoughts><PrivatePredictions>p2</PrivatePredictions><Content>hello</Content><Verdict>YES</Verdict><VerdictReasoning>because</VerdictReasoning><Withdrawn>false</Withdrawn>",
			want:  converse.Parsed{To: "bo", Whisper: true, Content: "hello", Private: "p1\n\np2", Verdict: "YES", Reasoning: "because", HasWithdrawn: true},
		},
		{
			name:  "untagged prose is the content",
			reply: "<PrivateThoughts speaker=\"ana lima\">secret</PrivateThoughts>\n  I think so.\n<Verdict>NO</Verdict><VerdictReasoning>r</VerdictReasoning>",
			want:  converse.Parsed{Content: "I think so.", Private: "secret", Verdict: "NO", Reasoning: "r"},
		},
		{name: "to all", reply: "<SpeakingTo>ALL</SpeakingTo><Content>x</Content>", want: converse.Parsed{Content: "x"}},
		{name: "to everyone", reply: "<SpeakingTo>Everyone</SpeakingTo><Content>x</Content>", want: converse.Parsed{Content: "x"}},
		{name: "to the time keeper keeps its addressee", reply: "<SpeakingTo>TimeKeeper</SpeakingTo><Content>x</Content>", want: converse.Parsed{To: converse.TimeKeeper, Content: "x"}},
		{name: "addressee by first name, other case", reply: "<SpeakingTo>CY</SpeakingTo><Content>x</Content>", want: converse.Parsed{To: "cy", Content: "x"}},
		{name: "addressee by full name lower case", reply: "<SpeakingTo>cy marlowe tate</SpeakingTo><Whisper>yes</Whisper><Content>x</Content>", want: converse.Parsed{To: "cy", Whisper: true, Content: "x"}},
		{name: "verdict in other case", reply: "<Content>x</Content><Verdict>maybe</Verdict><VerdictReasoning>r</VerdictReasoning>", want: converse.Parsed{Content: "x", Verdict: "MAYBE", Reasoning: "r"}},
		{name: "verdict in bold with a full stop", reply: "<Content>x</Content><Verdict>**Yes**.</Verdict><VerdictReasoning>r</VerdictReasoning>", want: converse.Parsed{Content: "x", Verdict: "YES", Reasoning: "r"}},
		{name: "verdict with spaces for underscores", reply: "<Content>x</Content><Verdict>Good Fit</Verdict><VerdictReasoning>r</VerdictReasoning>", want: converse.Parsed{Content: "x", Verdict: "GOOD_FIT", Reasoning: "r"}},
		{name: "verdict with a hyphen", reply: "<Content>x</Content><Verdict>good-fit</Verdict><VerdictReasoning>r</VerdictReasoning>", want: converse.Parsed{Content: "x", Verdict: "GOOD_FIT", Reasoning: "r"}},
		{name: "withdrawn spelled TRUE", reply: "<Content>x</Content><Verdict>NO</Verdict><VerdictReasoning>r</VerdictReasoning><Withdrawn>TRUE</Withdrawn>", want: converse.Parsed{Content: "x", Verdict: "NO", Reasoning: "r", Withdrawn: true, HasWithdrawn: true}},
		{name: "withdrawal after an earlier verdict", reply: "<Content>done</Content><Withdrawn>1</Withdrawn>", ctx: check{hadVerdict: true}, want: converse.Parsed{Content: "done", Withdrawn: true, HasWithdrawn: true}},
		{name: "verdict without reasoning when optional", reply: "<Content>x</Content><Verdict>NO</Verdict>", ctx: check{optional: true}, want: converse.Parsed{Content: "x", Verdict: "NO"}},
		{name: "placeholder verdict means none", reply: "<Content>x</Content><Verdict>YES | NO | MAYBE</Verdict><VerdictReasoning>not yet</VerdictReasoning>", want: converse.Parsed{Content: "x", Reasoning: "not yet"}},
		{name: "bracketed placeholder means none", reply: "<Content>x</Content><Verdict>[your verdict]</Verdict>", want: converse.Parsed{Content: "x"}},
		{name: "empty verdict tag means none", reply: "<Content>x</Content><Verdict></Verdict><Withdrawn>false</Withdrawn>", want: converse.Parsed{Content: "x", HasWithdrawn: true}},
		{name: "forced speaker who decided earlier", reply: "<Content>x</Content>", ctx: check{hadVerdict: true, mustDecide: true}, want: converse.Parsed{Content: "x"}},
		{name: "code fence around the reply", reply: "```xml\n<Content>x</Content>\n<Verdict>NO</Verdict><VerdictReasoning>r</VerdictReasoning>\n```", want: converse.Parsed{Content: "x", Verdict: "NO", Reasoning: "r"}},

		{name: "unknown verdict", reply: "<Content>x</Content><Verdict>HIRE</Verdict><VerdictReasoning>r</VerdictReasoning>",
			reasons: []string{`"HIRE" is not a valid verdict: use exactly one of YES, NO, MAYBE, GOOD_FIT`}},
		{name: "verdict that only starts like an option", reply: "<Content>x</Content><Verdict>YES, mostly</Verdict><VerdictReasoning>r</VerdictReasoning>",
			reasons: []string{"not a valid verdict"}},
		{name: "verdict without reasoning", reply: "<Content>x</Content><Verdict>YES</Verdict>",
			reasons: []string{"a verdict needs its reasons in <VerdictReasoning>"}},
		{name: "verdict with blank reasoning", reply: "<Content>x</Content><Verdict>YES</Verdict><VerdictReasoning>  </VerdictReasoning>",
			reasons: []string{"a verdict needs its reasons"}},
		{name: "withdrawal without a verdict", reply: "<Content>x</Content><Withdrawn>true</Withdrawn>",
			reasons: []string{"you can only withdraw after giving a verdict"}},
		{name: "withdrawal with a placeholder verdict", reply: "<Content>x</Content><Verdict>YES|NO</Verdict><Withdrawn>true</Withdrawn>",
			reasons: []string{"you can only withdraw after giving a verdict"}},
		{name: "withdrawn neither true nor false", reply: "<Content>x</Content><Verdict>NO</Verdict><VerdictReasoning>r</VerdictReasoning><Withdrawn>true|false</Withdrawn>",
			reasons: []string{`<Withdrawn> must be true or false, not "true|false"`}},
		{name: "withdrawn maybe", reply: "<Content>x</Content><Withdrawn>maybe</Withdrawn>",
			reasons: []string{`<Withdrawn> must be true or false, not "maybe"`}},
		{name: "whisper without addressee", reply: "<Whisper>true</Whisper><Content>x</Content>",
			reasons: []string{"a whisper needs one addressee in <SpeakingTo>"}},
		{name: "whisper to all", reply: "<SpeakingTo>All</SpeakingTo><Whisper>true</Whisper><Content>x</Content>",
			reasons: []string{"a whisper needs one addressee"}},
		{name: "whisper to the time keeper", reply: "<SpeakingTo>time keeper</SpeakingTo><Whisper>true</Whisper><Content>x</Content>",
			reasons: []string{"a whisper needs one addressee"}},
		{name: "whisper neither true nor false", reply: "<SpeakingTo>bo</SpeakingTo><Whisper>quietly</Whisper><Content>x</Content>",
			reasons: []string{`<Whisper> must be true or false, not "quietly"`}},
		{name: "unknown addressee", reply: "<SpeakingTo>Dave</SpeakingTo><Content>x</Content>",
			reasons: []string{`<SpeakingTo> "Dave" names nobody in this conversation: use All or one of Ana Lima, Bo Chen, Cy Marlowe Tate`}},
		{name: "whisper to an unknown addressee", reply: "<SpeakingTo>Dave</SpeakingTo><Whisper>true</Whisper><Content>x</Content>",
			reasons: []string{"names nobody", "a whisper needs one addressee"}},
		{name: "speaking to oneself", reply: "<SpeakingTo>Ana</SpeakingTo><Content>x</Content>",
			reasons: []string{"you cannot speak to yourself"}},
		{name: "no content", reply: "<Verdict>NO</Verdict><VerdictReasoning>r</VerdictReasoning>",
			reasons: []string{"the message has no content"}},
		{name: "empty reply", reply: "  ", reasons: []string{"the message has no content"}},
		{name: "verdict where none is asked", reply: "<Content>x</Content><Verdict>YES</Verdict>", ctx: check{options: []string{}},
			reasons: []string{"this conversation takes no verdicts"}},
		{name: "forced speaker without a verdict", reply: "<Content>still thinking</Content>", ctx: check{mustDecide: true},
			reasons: []string{"you must give your verdict now: one of YES, NO, MAYBE, GOOD_FIT"}},
		{name: "every problem at once", reply: "<SpeakingTo>nobody</SpeakingTo><Verdict>PERHAPS</Verdict><Withdrawn>true</Withdrawn>",
			reasons: []string{"no content", "names nobody", `"PERHAPS" is not a valid verdict`, "you can only withdraw"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := voteOptions
			if tt.ctx.options != nil {
				opts = tt.ctx.options
			}
			got, err := converse.ParseMessage(tt.reply, trio, "ana", opts, !tt.ctx.optional, tt.ctx.hadVerdict, tt.ctx.mustDecide)
			if tt.reasons == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if got != tt.want {
					t.Fatalf("parsed\n%+v\nwant\n%+v", got, tt.want)
				}
				return
			}
			var rej *converse.Rejection
			if !errors.As(err, &rej) {
				t.Fatalf("accepted %+v (err %v), want a rejection", got, err)
			}
			if len(rej.Reasons) != len(tt.reasons) {
				t.Errorf("%d reasons %q, want %d", len(rej.Reasons), rej.Reasons, len(tt.reasons))
			}
			for i, want := range tt.reasons {
				if i < len(rej.Reasons) && !strings.Contains(rej.Reasons[i], want) {
					t.Errorf("reason %d = %q, want it to contain %q", i, rej.Reasons[i], want)
				}
			}
		})
	}
}
