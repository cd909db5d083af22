// Package family reads limiter families (inspect.Family: the counters of
// one grouped pattern, the clients of a per-client Redisson limiter) in
// bounded pages, however many members they have, and keeps each family's
// totals and top offenders of the last minute and hour in bounded memory.
//
//   - reader.go: a Reader lists each family's members with SCAN pages on
//     every node and reads a bounded number of them a tick, families
//     taking turns; members.go says which keys are a family's members;
//   - page.go: one tick's reads (a Page), queued in the tick's own
//     pipeline (the walk carries it: walk.Walker.Carry);
//   - memo.go: a window read twice counts once;
//   - book.go: a Book turns readings into inspect.FamilyRow.
//
// What a family is, and the readings and rows the console shows, are
// package inspect's (the model); how a member is read is too
// (inspect.ObjectPatterns.QueueCandidates, inspect.QueueClientWindow). A
// Reader needs four of the Inspector's methods (Source).
package family
