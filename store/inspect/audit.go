package inspect

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/audit"
)

// The audit trail lives in package audit; these names keep it reachable
// from the Inspector the console already holds.
type (
	AuditRecord = audit.Record
	Audit       = audit.Trail
)

const (
	AuditKey              = audit.Key
	RefusedAuditKey       = audit.RefusedKey
	DefaultAuditMaxLen    = audit.DefaultMaxLen
	DefaultAuditRetention = audit.DefaultRetention
	MaxAuditRead          = audit.MaxRead

	OutcomeOK       = audit.OutcomeOK
	OutcomeDenied   = audit.OutcomeDenied
	OutcomeInvalid  = audit.OutcomeInvalid
	OutcomeNotFound = audit.OutcomeNotFound
	OutcomeConflict = audit.OutcomeConflict
	OutcomeError    = audit.OutcomeError
	OutcomeIntent   = audit.OutcomeIntent
)

// AuditTrail is audit.KeptFor on the Inspector's Redis.
func (c *Inspector) AuditTrail(key string, retention time.Duration) *Audit {
	return audit.KeptFor(c.rdb, key, retention)
}

// Audit is audit.Capped on the Inspector's Redis.
func (c *Inspector) Audit(key string, maxLen int64) *Audit {
	return audit.Capped(c.rdb, key, maxLen)
}
