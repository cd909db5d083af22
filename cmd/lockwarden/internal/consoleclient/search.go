package consoleclient

import "strings"

// The search behind ListQuery.Q, applied to the rows the console sent. A
// console whose lists take ?q= has narrowed them already, on the same
// fields, so this keeps every row it sent; one that ignores ?q= sends
// every row, and this gives the answer a search promises. It goes once
// every console in use searches on its own.

// keep is l without the rows ok refuses.
func keep[T any](l List[T], ok func(T) bool) List[T] {
	var out List[T]
	for i, it := range l.Items {
		if ok(it) {
			out.Items, out.Raw = append(out.Items, it), append(out.Raw, l.Raw[i])
		}
	}
	return out
}

// nameMatches: q is a case-insensitive part of s.
func nameMatches(s, q string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(q))
}

// lockMatches: q is part of the lock's name, or of who holds or waits for
// it: holder or owner id (so a client id), application, host, or the
// console's words for them.
func lockMatches(l Lock, q string) bool {
	if nameMatches(l.Name, q) {
		return true
	}
	for _, h := range l.Holders {
		if nameMatches(h.ID, q) || nameMatches(h.Who, q) || identityMatches(h.Client, q) {
			return true
		}
	}
	for _, w := range l.Waiters {
		if nameMatches(w.Owner, q) || nameMatches(w.Who, q) || identityMatches(w.Client, q) {
			return true
		}
	}
	return false
}

func identityMatches(id *Identity, q string) bool {
	return id != nil && (nameMatches(id.App, q) || nameMatches(id.Host, q))
}
