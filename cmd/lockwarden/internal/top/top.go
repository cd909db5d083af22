// Package top is `lockwarden top`: a live full-screen view of a running
// console, fed by its websocket (the frames the wall display gets), with
// the console's API behind Enter ("why") and, with --admin, 'u' (a
// holder-checked force-unlock after a reason and a confirmation). It is
// built on Bubble Tea; its state lives in the one model the program
// updates, so nothing here is shared between goroutines but messages.
package top

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/table"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/consoleclient"
)

// Options are what `lockwarden top` was started with.
type Options struct {
	// Admin enables 'u'; the console still decides by the token's role.
	Admin  bool
	Input  io.Reader
	Output io.Writer
}

// Run checks that the console answers and takes the token, then shows it
// until 'q' (or ctx ends). A console that goes away later is waited for:
// the view says so and reconnects.
func Run(ctx context.Context, c *consoleclient.Client, o Options) error {
	// A wrong address or token is an answer for the command line, not for
	// a screen that would retry it forever.
	alerts, _, err := c.Alerts(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, c, o.Admin)
	m.live.Alerts = alerts
	opts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithContext(ctx)}
	if o.Input != nil {
		opts = append(opts, tea.WithInput(o.Input))
	}
	if o.Output != nil {
		opts = append(opts, tea.WithOutput(o.Output))
	}
	p := tea.NewProgram(m, opts...)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.Watch(ctx, func(ev any) { p.Send(ev) })
	}()
	_, err = p.Run()
	cancel()
	wg.Wait()
	if ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return nil // the process was asked to stop
	}
	return err
}

// mode is what the keys act on.
type mode int

const (
	modeList    mode = iota // the two tables
	modeFilter              // typing the filter
	modeWhy                 // one object's answer
	modeHelp                // the keys
	modeReason              // force-unlock: which holder, and why
	modeConfirm             // force-unlock: yes or no
)

// Panes: the tables the cursor can be in.
const (
	paneLocks = iota
	paneLimiters
)

// flashFor is how long a message about what just happened stays.
const flashFor = 6 * time.Second

type model struct {
	ctx   context.Context
	c     *consoleclient.Client
	admin bool

	width, height int
	mode          mode
	keys          keyMap
	help          help.Model

	live      consoleclient.Live
	connected bool
	connErr   string
	retryAt   time.Time

	deadlocks   []consoleclient.Deadlock
	dlSeen      int // live.Deadlocks when deadlocks were fetched; -1 never
	dlFetchedAt time.Time
	dlBusy      bool

	hist    map[string]*history
	histSec int64 // the frame second last sampled

	pane   int
	tables [2]table.Model
	names  [2][]string // each table's rows by name, for the selection
	// moved: the cursor was moved in that table, so it follows its object
	// as rows re-sort; until then it stays on the top row, the most stuck.
	moved  [2]bool
	sorts  [2]int
	filter textinput.Model

	why    whyState
	unlock unlockState

	flash   string
	flashAt time.Time
}

func newModel(ctx context.Context, c *consoleclient.Client, admin bool) *model {
	m := &model{ctx: ctx, c: c, admin: admin, keys: newKeyMap(admin), help: help.New(),
		hist: map[string]*history{}, dlSeen: -1}
	for i := range m.tables {
		t := table.New(table.WithFocused(i == paneLocks))
		// 'u' is force-unlock here, not half a page up.
		t.KeyMap.HalfPageUp.SetKeys("ctrl+u")
		t.KeyMap.HalfPageDown.SetKeys("ctrl+d")
		m.tables[i] = t
	}
	m.filter = textinput.New()
	m.filter.Prompt = "/"
	m.filter.Placeholder = "name or holder"
	m.unlock.reason = textinput.New()
	m.unlock.reason.Prompt = "Reason: "
	m.unlock.reason.CharLimit = 500
	m.why.view = viewport.New(0, 0)
	m.styleTables()
	return m
}

func (m *model) Init() tea.Cmd { return nil }

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.Width = msg.Width
		m.refresh()
		m.layoutWhy()
		return m, nil
	case consoleclient.Connected:
		m.connected, m.connErr = true, ""
		m.live.Reset()
		m.dlSeen = -1
		return m, nil
	case consoleclient.Disconnected:
		m.connected = false
		if msg.Err != nil {
			m.connErr = msg.Err.Error()
		}
		m.retryAt = time.Now().Add(msg.RetryIn)
		return m, nil
	case consoleclient.Frame:
		typ, err := m.live.Apply(msg.Data)
		if err != nil {
			m.say(err.Error())
		}
		if typ == "stats" {
			m.sample()
		}
		m.refresh()
		return m, m.fetchDeadlocks()
	case deadlocksMsg:
		m.dlBusy = false
		if msg.err == nil {
			m.deadlocks = msg.ds
			m.refresh()
		}
		return m, nil
	case whyMsg:
		m.showWhy(msg)
		return m, nil
	case lockMsg:
		return m, m.startUnlock(msg)
	case unlockedMsg:
		m.unlocked(msg)
		return m, nil
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// say shows a message about what just happened in the footer.
func (m *model) say(s string) {
	m.flash, m.flashAt = s, time.Now()
}

// sample adds each limiter's last second to its sparkline once per
// second of the console's clock (frames come five times a second, each
// with the second before it).
func (m *model) sample() {
	sec := m.live.At / 1000
	if sec == m.histSec {
		return
	}
	m.histSec = sec
	for name, c := range m.live.Limiters {
		h := m.hist[name]
		if h == nil {
			h = &history{}
			m.hist[name] = h
		}
		h.add(c)
	}
	for name := range m.hist {
		if _, ok := m.live.Limiters[name]; !ok {
			delete(m.hist, name)
		}
	}
}

type deadlocksMsg struct {
	ds  []consoleclient.Deadlock
	err error
}

// deadlockRefresh is how often the cycles are read again while there are
// any: frames carry only their number, and a cycle's holders can change
// without it changing.
const deadlockRefresh = 5 * time.Second

// fetchDeadlocks reads the cycles from the API when their number changed,
// and now and then while there are any.
func (m *model) fetchDeadlocks() tea.Cmd {
	if m.dlBusy || !m.live.Primed {
		return nil
	}
	n := m.live.Deadlocks
	if n == m.dlSeen && (n == 0 || time.Since(m.dlFetchedAt) < deadlockRefresh) {
		return nil
	}
	if n == 0 {
		m.dlSeen, m.deadlocks = 0, nil
		return nil
	}
	m.dlBusy, m.dlSeen, m.dlFetchedAt = true, n, time.Now()
	ctx, c := m.ctx, m.c
	return func() tea.Msg {
		ds, _, err := c.Deadlocks(ctx)
		return deadlocksMsg{ds, err}
	}
}
