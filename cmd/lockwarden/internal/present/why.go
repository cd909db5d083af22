package present

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Facts are why's facts as "name: value" lines, by name; a *_ms fact
// reads as a duration.
func Facts(facts map[string]any) []string {
	keys := make([]string, 0, len(facts))
	for k := range facts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		v := facts[k]
		if n, ok := whole(v); ok && strings.HasSuffix(k, "_ms") {
			out = append(out, fmt.Sprintf("%s: %s", strings.TrimSuffix(k, "_ms"), Lease(n)))
			continue
		}
		switch v.(type) {
		case string, float64, bool, int, int64, nil:
			out = append(out, fmt.Sprintf("%s: %v", k, v))
		default:
			b, _ := json.Marshal(v)
			out = append(out, fmt.Sprintf("%s: %s", k, b))
		}
	}
	return out
}

// whole is a fact's number as an integer: JSON's float64, or the int64
// of an answer composed here.
func whole(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

// Action is one of why's ways out: its command (or its text, or its
// JSON), and what it does when it says.
func Action(a json.RawMessage) (what, does string) {
	var s string
	if json.Unmarshal(a, &s) == nil {
		return s, ""
	}
	var m map[string]any
	if json.Unmarshal(a, &m) == nil {
		does, _ = m["does"].(string)
		for _, k := range []string{"command", "label", "title", "summary"} {
			if v, ok := m[k].(string); ok && v != "" {
				return v, does
			}
		}
	}
	return string(a), ""
}

// WhyText is a why answer as the terminal shows it: its head line, the
// answer wrapped to width, the ways out (a command is never wrapped, so
// it can be copied whole), then the facts: on a short screen the way out
// shows before the numbers behind it.
func WhyText(head, answer string, facts map[string]any, actions []json.RawMessage, width int) string {
	var b strings.Builder
	b.WriteString(head + "\n\n" + Wrap(answer, width) + "\n")
	if len(actions) > 0 {
		b.WriteString("\nWays out:\n")
		for _, a := range actions {
			what, does := Action(a)
			b.WriteString("  " + what + "\n")
			if does != "" {
				b.WriteString(indent(Wrap(does, width-4), "    ") + "\n")
			}
		}
	}
	if len(facts) > 0 {
		b.WriteString("\nFacts:\n")
		for _, f := range Facts(facts) {
			b.WriteString(indent(Wrap(f, width-2), "  ") + "\n")
		}
	}
	return b.String()
}

func indent(text, by string) string {
	return by + strings.ReplaceAll(text, "\n", "\n"+by)
}
