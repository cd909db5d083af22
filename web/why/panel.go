package why

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/views/words"
)

// Panel is a as the page's panel shows it, the facts said for a person:
// a _ms fact as a duration, an _at fact as a clock time.
func Panel(a Answer, now time.Time) *views.WhyPanel {
	p := &views.WhyPanel{State: a.State, Answer: a.Answer}
	for _, f := range a.FactList() {
		p.Facts = append(p.Facts, views.WhyFact{Label: factLabel(f.Key), Value: factValue(f.Key, f.Value, now)})
	}
	for _, x := range a.Actions {
		p.Actions = append(p.Actions, views.WhyAction{Action: x.Action, Label: x.Label, URL: x.URL,
			Command: x.Command, Does: x.Does, Admin: x.Admin})
	}
	return p
}

func factLabel(k string) string {
	k = strings.TrimSuffix(strings.TrimSuffix(k, "_ms"), "_at")
	return strings.ReplaceAll(k, "_", " ")
}

func factValue(k string, v any, now time.Time) string {
	switch x := v.(type) {
	case int64:
		if strings.HasSuffix(k, "_ms") {
			return dur(x)
		}
		return words.Count(x)
	case int:
		return words.Count(int64(x))
	case float64:
		if strings.HasSuffix(k, "_ms") {
			return words.Number(x) + " ms"
		}
		return words.Number(x)
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case string:
		if strings.HasSuffix(k, "_at") {
			if t, err := time.Parse(time.RFC3339, x); err == nil {
				return clock(t, now)
			}
		}
		return x
	}
	return fmt.Sprint(v)
}
