package alert

import (
	"fmt"

	"github.com/lockwarden/lockwarden/web/live"
)

// Redis settings that break exclusion (web/live's settings.go), one alert
// per master and setting, its message ending with the exact fix.
const (
	RuleRedisEvictsLocks       = live.SettingEvictsLocks
	RuleRedisKeyspaceEventsOff = live.SettingKeyspaceEventsOff
	RuleRedisFencingNotKept    = live.SettingFencingNotKept
	RuleRedisAcksNoReplica     = live.SettingAcksNoReplica
)

var settingRules = []string{RuleRedisEvictsLocks, RuleRedisAcksNoReplica, RuleRedisFencingNotKept, RuleRedisKeyspaceEventsOff}

// settingConditions adds a condition per setting problem of sn whose rule
// is on.
func settingConditions(sn *live.Snapshot, on func(string) bool, add func(rule, name, format string, args ...any)) {
	enabled := map[string]bool{}
	for _, r := range settingRules {
		enabled[r] = on(r)
	}
	for _, p := range sn.SettingProblems() {
		if enabled[p.Rule] {
			add(p.Rule, p.Node, "%s", SettingMessage(p))
		}
	}
}

// SettingMessage says a setting problem and its fix.
func SettingMessage(p live.SettingProblem) string {
	return fmt.Sprintf("Redis %s: %s is %q: %s. Fix: %s", p.Node, p.Setting, p.Value, p.Says, p.Fix)
}
