package top

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/consoleclient"
	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/present"
)

// The screens behind Enter and 'u': one object's "why", and a
// force-unlock that asks which holder, why, and then yes or no, as the
// console's confirmation page does.

type whyState struct {
	name    string
	isLock  bool
	loading bool
	answer  *consoleclient.Why
	failed  string // why there is no answer
	view    viewport.Model
}

type whyMsg struct {
	name string
	why  *consoleclient.Why
	err  error
}

func (m *model) openWhy(name string, isLock bool) tea.Cmd {
	m.mode = modeWhy
	m.why.name, m.why.isLock, m.why.loading, m.why.answer, m.why.failed = name, isLock, true, nil, ""
	m.layoutWhy()
	ctx, c := m.ctx, m.c
	return func() tea.Msg {
		w, _, err := c.Why(ctx, name)
		return whyMsg{name, w, err}
	}
}

func (m *model) showWhy(msg whyMsg) {
	if msg.name != m.why.name {
		return // an answer for a screen already left
	}
	m.why.loading, m.why.answer = false, msg.why
	if msg.err != nil {
		m.why.failed = "No answer: " + msg.err.Error()
	}
	m.layoutWhy()
}

// layoutWhy sizes the answer's view to the screen and fills it.
func (m *model) layoutWhy() {
	m.why.view.Width, m.why.view.Height = m.width, max(1, m.height-2)
	text := m.why.failed
	switch w := m.why.answer; {
	case m.why.loading:
		text = "Asking the console why " + m.why.name + " is as it is…"
	case w != nil:
		text = present.WhyText(fmt.Sprintf("%s (%s): %s", w.Name, w.Kind, w.State), w.Answer, w.Facts, w.Actions, m.width-1)
	}
	// WhyText leaves a command whole; one wider than the screen is broken
	// at its edge rather than cut off.
	m.why.view.SetContent(ansi.Hardwrap(text, max(10, m.width), true))
}

func (m *model) whyKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(msg, m.keys.Quit):
		return tea.Quit
	case key.Matches(msg, m.keys.Back):
		m.mode = modeList
		return nil
	case key.Matches(msg, m.keys.Unlock):
		if !m.why.isLock {
			m.say("force-unlock is for locks")
			return nil
		}
		return m.askUnlock(m.why.name)
	}
	var cmd tea.Cmd
	m.why.view, cmd = m.why.view.Update(msg)
	return cmd
}

type unlockState struct {
	name   string
	lock   *consoleclient.Lock
	holder int // which of lock.Holders
	reason textinput.Model
	back   mode // where Esc and the end return to
}

type lockMsg struct {
	name string
	lock *consoleclient.Lock
	err  error
}

type unlockedMsg struct {
	name, holder string
	err          error
}

// askUnlock reads the lock's holders and what a force-unlock of each
// would do, as the console's confirmation page shows them.
func (m *model) askUnlock(name string) tea.Cmd {
	if !m.admin {
		m.say("read-only: start `lockwarden top --admin` (with the admin token) to force-unlock")
		return nil
	}
	ctx, c := m.ctx, m.c
	return func() tea.Msg {
		l, _, err := c.Lock(ctx, name)
		return lockMsg{name, l, err}
	}
}

func (m *model) startUnlock(msg lockMsg) tea.Cmd {
	switch {
	case msg.err != nil:
		m.say(fmt.Sprintf("%s: %v", msg.name, msg.err))
		return nil
	case len(msg.lock.Holders) == 0:
		m.say(msg.name + " is free: nobody holds it now")
		return nil
	}
	back := m.mode
	if back != modeWhy {
		back = modeList
	}
	m.unlock.name, m.unlock.lock, m.unlock.holder, m.unlock.back = msg.name, msg.lock, 0, back
	m.unlock.reason.SetValue("")
	m.mode = modeReason
	return m.unlock.reason.Focus()
}

func (m *model) unlockKey(msg tea.KeyMsg) tea.Cmd {
	u := &m.unlock
	if msg.Type == tea.KeyEsc {
		m.mode = u.back
		m.say("force-unlock cancelled: nothing was changed")
		return nil
	}
	if m.mode == modeConfirm {
		if s := strings.ToLower(msg.String()); s != "y" {
			m.mode = u.back
			m.say("force-unlock cancelled: nothing was changed")
			return nil
		}
		m.mode = u.back
		ctx, c := m.ctx, m.c
		name, holder, reason := u.name, u.lock.Holders[u.holder].ID, strings.TrimSpace(u.reason.Value())
		m.say("force-unlocking " + name + "…")
		return func() tea.Msg {
			_, err := c.ForceUnlock(ctx, name, holder, reason)
			return unlockedMsg{name, holder, err}
		}
	}
	switch msg.Type {
	case tea.KeyTab:
		u.holder = (u.holder + 1) % len(u.lock.Holders)
		return nil
	case tea.KeyEnter:
		if strings.TrimSpace(u.reason.Value()) == "" {
			m.say("a reason is required: the audit trail keeps it")
			return nil
		}
		u.reason.Blur()
		m.mode = modeConfirm
		return nil
	}
	var cmd tea.Cmd
	u.reason, cmd = u.reason.Update(msg)
	return cmd
}

func (m *model) unlocked(msg unlockedMsg) {
	if msg.err != nil {
		m.say("force-unlock of " + msg.name + " refused: " + msg.err.Error())
		return
	}
	m.say(fmt.Sprintf("force-unlocked %s (holder %s); the audit trail has your reason", msg.name, msg.holder))
}

// unlockView is the force-unlock screen: the holder, what will happen,
// the reason, and then the question.
func (m *model) unlockView() string {
	u := m.unlock
	h := u.lock.Holders[u.holder]
	w := max(10, m.width-2)
	var b strings.Builder
	b.WriteString(titleStyle.Render(present.Cell(" Force-unlock "+u.name, m.width, false)) + "\n\n")
	who := h.Who
	if who == "" {
		who = h.ID
	}
	line := fmt.Sprintf("Holder: %s", who)
	if len(u.lock.Holders) > 1 {
		line = fmt.Sprintf("Holder %d of %d (tab: next): %s", u.holder+1, len(u.lock.Holders), who)
	}
	b.WriteString(present.Wrap(line, w) + "\n")
	b.WriteString(present.Wrap("Holder id: "+h.ID, w) + "\n\n")
	if plan, ok := u.lock.ForceUnlock[h.ID]; ok && plan.Summary != "" {
		b.WriteString(present.Wrap("It "+plan.Summary+".", w) + "\n")
	}
	b.WriteString(present.Wrap("Only if this holder still holds it: if another took it meanwhile, nothing is changed.", w) + "\n\n")
	if m.mode == modeConfirm {
		b.WriteString(warnStyle.Render(present.Wrap(fmt.Sprintf("Force-unlock %s held by %s now? [y/N]", u.name, who), w)) + "\n")
		b.WriteString("Reason: " + strings.TrimSpace(u.reason.Value()) + "\n")
	} else {
		b.WriteString(u.reason.View() + "\n")
	}
	return b.String()
}
