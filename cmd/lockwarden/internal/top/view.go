package top

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/table"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/consoleclient"
	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/present"
	"github.com/lockwarden/lockwarden/views/words"
)

var (
	titleStyle    = lipgloss.NewStyle().Reverse(true).Bold(true)
	sectionStyle  = lipgloss.NewStyle().Bold(true)
	criticalStyle = lipgloss.NewStyle().Foreground(lipgloss.Color("9")).Bold(true)
	warnStyle     = lipgloss.NewStyle().Foreground(lipgloss.Color("11")).Bold(true)
	mutedStyle    = lipgloss.NewStyle().Faint(true)
)

// The lines above the tables: at most an eighth of the screen for alerts
// and a tenth for deadlocks (3 and 2 on a 24-line terminal), so the
// tables keep their room however many fire.
func (m *model) headRoom() (alerts, deadlocks int) {
	return max(3, m.height/8), max(2, m.height/10)
}

// styleTables marks the cursor's row in the focused table only.
func (m *model) styleTables() {
	for i := range m.tables {
		s := table.DefaultStyles()
		s.Header = s.Header.Bold(true).Underline(true)
		s.Selected = lipgloss.NewStyle()
		if i == m.pane {
			s.Selected = lipgloss.NewStyle().Reverse(true)
		}
		m.tables[i].SetStyles(s)
	}
}

// refresh rebuilds both tables from the frames' state for the screen's
// size, keeping each cursor on the object it was on.
func (m *model) refresh() {
	if m.width <= 0 || m.height <= 0 {
		return
	}
	filter := m.filter.Value()
	locks := lockRows(&m.live, m.deadlocks, filter, lockSorts[m.sorts[paneLocks]])
	lims := limiterRows(&m.live, m.hist, filter, limiterSorts[m.sorts[paneLimiters]])
	spark := min(historyLen, max(6, (m.width-64)/2))

	lockCells := make([][]string, len(locks))
	lockNames := make([]string, len(locks))
	for i, r := range locks {
		lockCells[i], lockNames[i] = r.cells(), r.name
	}
	limCells := make([][]string, len(lims))
	limNames := make([]string, len(lims))
	for i, r := range lims {
		limCells[i], limNames[i] = r.cells(spark), r.name
	}
	limCols := slices.Clone(limiterColumns)
	limCols[5].Width, limCols[6].Width = spark, spark

	// The tables share what the lines above and below leave; a short one
	// gives its spare rows to the other.
	room := max(4, m.height-len(m.headLines())-1-2) // footer, two section titles
	need := [2]int{len(locks) + 1, len(lims) + 1}
	h := [2]int{room / 2, room - room/2}
	switch {
	case need[0]+need[1] <= room:
		h = [2]int{need[0], room - need[0]}
	case need[0] < h[0]:
		h = [2]int{need[0], room - need[0]}
	case need[1] < h[1]:
		h = [2]int{room - need[1], need[1]}
	}
	m.setTable(paneLocks, lockColumns, lockCells, lockNames, h[0])
	m.setTable(paneLimiters, limCols, limCells, limNames, h[1])
}

// setTable fills one table, its columns fitted to the width (each cell
// has a space either side), its cursor on the name it was on.
func (m *model) setTable(pane int, cols []present.Column, cells [][]string, names []string, height int) {
	t := &m.tables[pane]
	var was string
	if i := t.Cursor(); i >= 0 && i < len(m.names[pane]) {
		was = m.names[pane][i]
	}
	ws := present.Fit(cols, cells, m.width-2)
	tc := make([]table.Column, len(cols))
	for i, c := range cols {
		tc[i] = table.Column{Title: c.Title, Width: ws[i]}
	}
	// The table cuts and pads on the left; numbers read better right.
	rows := make([]table.Row, len(cells))
	for i, r := range cells {
		row := slices.Clone(r)
		for j, c := range cols {
			if c.Right && ws[j] > 0 {
				row[j] = present.Cell(row[j], ws[j], true)
			}
		}
		rows[i] = row
	}
	// Rows first: columns narrower than a previous row would cut it.
	t.SetRows(nil)
	t.SetColumns(tc)
	t.SetRows(rows)
	t.SetHeight(max(2, height))
	t.SetWidth(m.width)
	m.names[pane] = names
	if i := slices.Index(names, was); i >= 0 && m.moved[pane] {
		t.SetCursor(i)
	} else if (t.Cursor() < 0 || !m.moved[pane]) && len(rows) > 0 {
		t.SetCursor(0)
	}
}

// headLines are the lines above the tables: the title bar, the firing
// alerts (critical first), the deadlocks.
func (m *model) headLines() []string {
	lines := []string{m.titleBar()}
	maxAlertLines, maxDeadlockLines := m.headRoom()
	alerts := slices.Clone(m.live.Alerts)
	slices.SortStableFunc(alerts, func(a, b consoleclient.Alert) int {
		return strings.Compare(severityRank(a.Severity), severityRank(b.Severity))
	})
	for i, a := range alerts {
		if i == maxAlertLines-1 && len(alerts) > maxAlertLines {
			lines = append(lines, warnStyle.Render(fmt.Sprintf("+%d more firing alerts", len(alerts)-i)))
			break
		}
		st := warnStyle
		if a.Severity == "critical" {
			st = criticalStyle
		}
		lines = append(lines, st.Render(strings.ToUpper(a.Severity))+" "+a.Rule+" "+a.Name+": "+a.Message)
	}
	for i, d := range m.deadlocks {
		if i == maxDeadlockLines {
			break
		}
		steps := make([]string, 0, len(d.Cycle))
		for _, st := range d.Cycle {
			who := st.Who
			if st.Client != nil {
				who = st.Client.App
			}
			steps = append(steps, fmt.Sprintf("%s (%s)", st.Lock, who))
		}
		lines = append(lines, criticalStyle.Render("DEADLOCK")+fmt.Sprintf(" %s: %s → %s",
			words.Duration(time.Since(d.Since).Milliseconds()), strings.Join(steps, " → "), d.Cycle[0].Lock))
	}
	return lines
}

func severityRank(s string) string {
	if s == "critical" {
		return "0"
	}
	return "1" + s
}

// titleBar says which console, whether the view is live, and how much
// it sees.
func (m *model) titleBar() string {
	host := m.c.URL()
	if u, err := url.Parse(host); err == nil {
		host = u.Host
	}
	state := "connecting…"
	switch {
	case m.connected && m.live.Primed:
		state = "live"
	case !m.connected && m.connErr != "":
		state = fmt.Sprintf("offline, retrying in %s: %s", words.Duration(max(0, time.Until(m.retryAt).Milliseconds())), m.connErr)
	}
	if m.live.RedisDown {
		state += " · REDIS DOWN"
	}
	s := fmt.Sprintf(" lockwarden top · %s · %s · %d locks · %d limiters", host, state, m.live.LockCount, m.live.LimiterCount)
	if m.admin {
		s += " · admin"
	}
	return titleStyle.Render(present.Cell(s, m.width, false))
}

func (m *model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return "lockwarden top: starting…"
	}
	var lines []string
	switch m.mode {
	case modeWhy:
		lines = append(lines, titleStyle.Render(present.Cell(" why "+m.why.name, m.width, false)))
		lines = append(lines, strings.Split(m.why.view.View(), "\n")...)
	case modeHelp:
		lines = append(lines, titleStyle.Render(present.Cell(" lockwarden top: keys", m.width, false)), "")
		lines = append(lines, strings.Split(m.help.FullHelpView(m.keys.FullHelp()), "\n")...)
		lines = append(lines, "", present.Wrap("Locks are ranked stuck first: in a deadlock (!!), named by a firing alert (!), "+
			"then by current waiters and the 10 s wait p99. Limiters show the last second, and the seconds before as sparklines. "+
			"The view is read-only unless started with --admin.", m.width))
	case modeReason, modeConfirm:
		lines = append(lines, strings.Split(m.unlockView(), "\n")...)
	default:
		lines = append(lines, m.headLines()...)
		lines = append(lines, sectionStyle.Render(m.sectionTitle(paneLocks, "LOCKS", len(m.names[paneLocks]), m.live.LockCount)))
		lines = append(lines, strings.Split(m.tables[paneLocks].View(), "\n")...)
		lines = append(lines, sectionStyle.Render(m.sectionTitle(paneLimiters, "LIMITERS", len(m.names[paneLimiters]), m.live.LimiterCount)))
		lines = append(lines, strings.Split(m.tables[paneLimiters].View(), "\n")...)
	}
	// Every line fits the width and the footer stays on the last line:
	// the terminal would wrap a longer line and scroll the title away.
	lines = strings.Split(strings.Join(lines, "\n"), "\n")
	body := m.height - 1
	if len(lines) > body {
		lines = lines[:body]
	}
	for len(lines) < body {
		lines = append(lines, "")
	}
	lines = append(lines, m.footer())
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.width, "")
	}
	return strings.Join(lines, "\n")
}

func (m *model) sectionTitle(pane int, name string, shown, total int) string {
	s := fmt.Sprintf("%s %d", name, total)
	if f := m.filter.Value(); f != "" {
		s += fmt.Sprintf(" (%d match %q)", shown, f)
	}
	sorts := lockSorts
	if pane == paneLimiters {
		sorts = limiterSorts
	}
	s += " · sort: " + sorts[m.sorts[pane]]
	if pane == m.pane {
		s = "▸ " + s
	} else {
		s = "  " + s
	}
	return s
}

// footer is the filter being typed, a message about what just happened,
// or the keys.
func (m *model) footer() string {
	switch {
	case m.mode == modeFilter:
		return m.filter.View() + mutedStyle.Render("  enter: keep · esc: clear")
	case m.flash != "" && time.Since(m.flashAt) < flashFor:
		return warnStyle.Render(m.flash)
	case m.mode == modeReason:
		keys := "enter: continue · esc: cancel"
		if m.unlock.lock != nil && len(m.unlock.lock.Holders) > 1 {
			keys = "enter: continue · tab: next holder · esc: cancel"
		}
		return mutedStyle.Render(keys)
	case m.mode == modeConfirm:
		return mutedStyle.Render("y: force-unlock · any other key: cancel")
	case m.mode == modeWhy:
		keys := "esc: back · ↑/↓: scroll · q: quit"
		if m.admin && m.why.isLock {
			keys = "esc: back · u: force-unlock · ↑/↓: scroll · q: quit"
		}
		return mutedStyle.Render(keys)
	case m.filter.Value() != "":
		return mutedStyle.Render("filter /"+m.filter.Value()+" (esc clears) · ") + m.help.ShortHelpView(m.keys.ShortHelp())
	}
	return m.help.ShortHelpView(m.keys.ShortHelp())
}
