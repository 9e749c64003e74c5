package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// encodingVersion starts every entry's canonical encoding, so a future
// change of fields cannot be mistaken for this one.
const encodingVersion = "hookrelay-audit-v1"

// Encode returns the canonical encoding of e's fields (ID to Error; not
// PrevHash and Hash): each field in a fixed order as its length (uvarint)
// and bytes, integers in decimal and the time as RFC 3339 in UTC to the
// microsecond, as PostgreSQL keeps it.
func Encode(e *db.AuditEntry) []byte {
	b := make([]byte, 0, 256+len(e.Before)+len(e.After))
	put := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	num := func(n int64) { put(strconv.FormatInt(n, 10)) }
	put(encodingVersion)
	num(e.ID)
	put(e.At.UTC().Truncate(time.Microsecond).Format("2006-01-02T15:04:05.000000Z"))
	put(e.ActorKind)
	put(e.ActorRole)
	num(e.ActorUserID)
	num(e.ActorTokenID)
	num(e.ActorSessionID)
	num(e.ActorMerchantID)
	num(e.ActorCarrierID)
	put(e.ActorName)
	put(e.Addr)
	put(e.UserAgent)
	put(e.Action)
	put(e.TargetType)
	put(e.TargetID)
	put(e.Before)
	put(e.After)
	put(e.Result)
	put(e.Error)
	return b
}

// Sum returns the hash of e: SHA-256(e.PrevHash || Encode(e)).
func Sum(e *db.AuditEntry) []byte {
	h := sha256.New()
	h.Write(e.PrevHash)
	h.Write(Encode(e))
	return h.Sum(nil)
}

// Chain is how package db streams the entries: EventData for the
// audit.entry operational webhook event. The append hashes each entry in
// PostgreSQL (hookrelay_audit_append) as Sum does; Verify checks it with
// Sum, and a test holds the two to the same bytes.
var Chain = db.AuditChain{Event: EventData}
