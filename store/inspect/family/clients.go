package family

import (
	"sort"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// A per-client limiter's page lists its clients' windows. They come from
// the readings of the tick's pages, never from a walk of the page's own:
// a request that SCANs for a limiter's clients costs Redis a pass over
// the keyspace per page load. Per per-client family the Reader keeps the
// latest window of at most inspect.MaxClientsShown clients, those with the
// smallest ids (as a list sorted by id shows its top), in memory bounded
// by the number of families. A client the last whole pass did not read
// (its key expired or was deleted) is dropped when the next pass starts,
// a fixed window as soon as it has ended.

// clientSeen is one client's latest window.
type clientSeen struct {
	w    inspect.ClientWindow
	at   time.Time // when it was read (the reader's clock)
	pass int64     // the pass (Size.Passes) that read it
}

// keepClient records w, read at at, as s's client's latest window when the
// client is among the MaxClientsShown smallest ids s keeps.
func (s *familyScan) keepClient(w inspect.ClientWindow, at time.Time) {
	seen := clientSeen{w: w, at: at, pass: s.size.Passes}
	if _, ok := s.clients[w.ClientID]; ok || len(s.clients) < inspect.MaxClientsShown {
		if s.clients == nil {
			s.clients = map[string]clientSeen{}
		}
		s.clients[w.ClientID] = seen
		return
	}
	largest := ""
	for id := range s.clients {
		if id > largest {
			largest = id
		}
	}
	if w.ClientID < largest {
		delete(s.clients, largest)
		s.clients[w.ClientID] = seen
	}
}

// sweepClients forgets the clients the pass before the current one did
// not read.
func (s *familyScan) sweepClients() {
	for id, c := range s.clients {
		if c.pass < s.size.Passes-1 {
			delete(s.clients, id)
		}
	}
}

// Clients are the windows of the per-client limiter name's clients as
// last read, sorted by client id, at most inspect.MaxClientsShown: a fixed
// window's ResetInMS counts down from its reading to now, and a fixed
// window that has ended since is left out (its client starts a full one).
// Nil when name is no family the reader reads.
func (r *Reader) Clients(name string, now time.Time) []inspect.ClientWindow {
	s := r.scans[name]
	if s == nil || s.fam.Kind != inspect.FamilyPerClient {
		return nil
	}
	out := make([]inspect.ClientWindow, 0, len(s.clients))
	for id, c := range s.clients {
		w := c.w
		if w.ResetInMS > 0 {
			w.ResetInMS -= now.Sub(c.at).Milliseconds()
			if w.ResetInMS <= 0 {
				delete(s.clients, id)
				continue
			}
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return strings.Compare(out[i].ClientID, out[j].ClientID) < 0 })
	return out
}
