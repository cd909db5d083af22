package top

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// keyMap is every key `top` answers to; the help (short in the footer,
// full on '?') is built from it.
type keyMap struct {
	Up, Down, Pane, Filter, Sort, Why, Back, Unlock, Help, Quit key.Binding
	admin                                                       bool
}

func newKeyMap(admin bool) keyMap {
	k := keyMap{
		Up:     key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:   key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Pane:   key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "locks/limiters")),
		Filter: key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Sort:   key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort")),
		Why:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "why")),
		Back:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Unlock: key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "force-unlock")),
		Help:   key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:   key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		admin:  admin,
	}
	return k
}

// The help lists 'u' only with --admin; without it the key still answers,
// to say the view is read-only.
func (k keyMap) ShortHelp() []key.Binding {
	if k.admin {
		return []key.Binding{k.Filter, k.Sort, k.Why, k.Pane, k.Unlock, k.Help, k.Quit}
	}
	return []key.Binding{k.Filter, k.Sort, k.Why, k.Pane, k.Help, k.Quit}
}

func (k keyMap) FullHelp() [][]key.Binding {
	last := []key.Binding{k.Help, k.Quit}
	if k.admin {
		last = append([]key.Binding{k.Unlock}, last...)
	}
	return [][]key.Binding{{k.Up, k.Down, k.Pane}, {k.Filter, k.Sort, k.Why, k.Back}, last}
}

// key acts on one key press as the current mode reads it.
func (m *model) key(msg tea.KeyMsg) tea.Cmd {
	if msg.String() == "ctrl+c" {
		return tea.Quit
	}
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !m.typing() {
		return m.keysAtOnce(msg)
	}
	switch m.mode {
	case modeFilter:
		return m.filterKey(msg)
	case modeReason, modeConfirm:
		return m.unlockKey(msg)
	case modeHelp:
		if key.Matches(msg, m.keys.Quit) {
			return tea.Quit
		}
		if key.Matches(msg, m.keys.Back, m.keys.Help) {
			m.mode = modeList
		}
		return nil
	case modeWhy:
		return m.whyKey(msg)
	}
	switch {
	case key.Matches(msg, m.keys.Quit):
		return tea.Quit
	case key.Matches(msg, m.keys.Help):
		m.mode = modeHelp
	case key.Matches(msg, m.keys.Filter):
		m.mode = modeFilter
		return m.filter.Focus()
	case key.Matches(msg, m.keys.Back):
		m.filter.SetValue("")
		m.refresh()
	case key.Matches(msg, m.keys.Sort):
		n := len(lockSorts)
		if m.pane == paneLimiters {
			n = len(limiterSorts)
		}
		m.sorts[m.pane] = (m.sorts[m.pane] + 1) % n
		m.refresh()
	case key.Matches(msg, m.keys.Pane):
		m.pane = 1 - m.pane
		m.tables[m.pane].Focus()
		m.tables[1-m.pane].Blur()
		m.styleTables()
	case key.Matches(msg, m.keys.Why):
		if name := m.selected(); name != "" {
			return m.openWhy(name, m.pane == paneLocks)
		}
	case key.Matches(msg, m.keys.Unlock):
		if m.pane != paneLocks {
			m.say("force-unlock is for locks: tab to the locks table")
			return nil
		}
		if name := m.selected(); name != "" {
			return m.askUnlock(name)
		}
	default:
		var cmd tea.Cmd
		before := m.tables[m.pane].Cursor()
		m.tables[m.pane], cmd = m.tables[m.pane].Update(msg)
		m.moved[m.pane] = m.moved[m.pane] || m.tables[m.pane].Cursor() != before
		return cmd
	}
	return nil
}

// typing is whether keys go to a text field (the filter, the reason).
func (m *model) typing() bool { return m.mode == modeFilter || m.mode == modeReason }

// keysAtOnce acts on several keys that reached Bubble Tea in one read (a
// paste such as "/billing", or keys typed faster than it reads), which it
// sends as one KeyRunes: outside a text field each rune is a key of its
// own, and once one of them opens a text field the rest is its text.
func (m *model) keysAtOnce(msg tea.KeyMsg) tea.Cmd {
	var cmds []tea.Cmd
	for i, r := range msg.Runes {
		if m.typing() {
			cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: msg.Runes[i:]}))
			break
		}
		cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}))
	}
	return tea.Batch(cmds...)
}

// filterKey edits the filter, which applies as it is typed; Enter keeps
// it, Esc drops it.
func (m *model) filterKey(msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyEnter:
		m.mode = modeList
		m.filter.Blur()
		return nil
	case tea.KeyEsc:
		m.mode = modeList
		m.filter.Blur()
		m.filter.SetValue("")
		m.refresh()
		return nil
	}
	var cmd tea.Cmd
	m.filter, cmd = m.filter.Update(msg)
	m.refresh()
	return cmd
}

// selected is the name under the focused table's cursor.
func (m *model) selected() string {
	i := m.tables[m.pane].Cursor()
	if i < 0 || i >= len(m.names[m.pane]) {
		return ""
	}
	return m.names[m.pane][i]
}
