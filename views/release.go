package views

import "strconv"

// ReleaseAllConfirmPage is GET /clients/{id}/release-all: everything a
// release-all would do to one client, named by application, host and pid,
// before it is done.
type ReleaseAllConfirmPage struct {
	Layout
	Client ClientIdentityRow
	Steps  []ReleaseStep
	// Reason is the typed reason after a refused submission; ReasonError
	// says what was wrong with it.
	Reason      string
	ReasonError string
}

// ReleaseStep is one hold the release-all breaks, or one place in a queue
// it drops, and what that does.
type ReleaseStep struct {
	Lock string
	Kind string
	What string // holdText's words
	Does string // the force-unlock's plan, or what dropping the place does
}

// clientAlive: a registered client that still beats. Releasing what it
// holds lets another process take its locks while it works.
func clientAlive(c ClientIdentityRow) bool { return c.Registered && !c.Gone }

// clientName is a client by application, host and pid, without its
// version: the heading of its release-all.
func clientName(c ClientIdentityRow) string {
	if !c.Registered {
		return "unregistered client " + c.ID
	}
	return c.App + " on " + c.Host + " (pid " + strconv.Itoa(c.PID) + ")"
}

// aliveWarning is what stands beside a release-all of a live client.
func aliveWarning(c ClientIdentityRow) string {
	return "This client is alive (" + heartbeatText(c) + "): it still runs and believes it holds these locks. " +
		"Releasing them lets another process take them while it works; release a live client only when it hangs."
}
