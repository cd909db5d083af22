package top

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// A paste of "/billing" reaches Bubble Tea in one read, as one KeyRunes
// with all its runes (so do keys typed faster than it reads): it opens the
// filter with "billing" in it, as the keys typed one by one do. Before,
// the whole KeyRunes matched no key and went to the table, which ignored it.
func TestKeysInOneReadActOneByOne(t *testing.T) {
	for _, paste := range []bool{false, true} {
		m := newModel(t.Context(), nil, false)
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/billing"), Paste: paste})
		if m.mode != modeFilter || m.filter.Value() != "billing" {
			t.Errorf("paste %v: \"/billing\" in one read left mode %d, filter %q; want the filter open with \"billing\"",
				paste, m.mode, m.filter.Value())
		}
	}
	// Keys that open no text field act one after the other: "?" then "q"
	// opens the help and quits from it.
	m := newModel(t.Context(), nil, false)
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("?q")})
	if m.mode != modeHelp || !quits(cmd) {
		t.Errorf("\"?q\" in one read: mode %d, quits %v; want the help shown and top quitting", m.mode, quits(cmd))
	}
}

// quits runs cmd (a batch too) and reports whether it asks Bubble Tea to quit.
func quits(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	switch msg := cmd().(type) {
	case tea.QuitMsg:
		return true
	case tea.BatchMsg:
		for _, c := range msg {
			if quits(c) {
				return true
			}
		}
	}
	return false
}
