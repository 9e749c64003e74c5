package audit

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/hookrelay/hookrelay/db"
)

// pruned is the After of an audit.pruned entry.
type pruned struct {
	Partitions  []string `json:"partitions"`
	ThroughID   string   `json:"through_id"`
	ThroughHash string   `json:"through_hash"`
}

// Reader reads the chain (*db.DB).
type Reader interface {
	AuditHeadGet(ctx context.Context) (db.AuditHead, error)
	AuditList(ctx context.Context, f db.AuditFilter, afterID int64, limit int) ([]db.AuditEntry, error)
}

// Report is the outcome of a verification.
type Report struct {
	// Count is how many entries were checked and found intact.
	Count int64
	// Head is the head the verification ran up to (entries appended while
	// it ran are left for the next one).
	Head db.AuditHead
	// BrokenID is the first entry found edited, missing or re-linked (0
	// when the chain is intact, or when the head itself is wrong); Problem
	// says what is wrong ("" when intact).
	BrokenID int64
	Problem  string
}

// OK reports whether the chain verified.
func (r Report) OK() bool { return r.Problem == "" }

// verifyPage is how many entries one read of Verify takes.
const verifyPage = 1000

// Verify walks the retained chain from its anchor to its head and checks
// every entry: its id follows the one before (no entry removed), its
// PrevHash is the hash before (no entry re-linked), its hash is that of its
// fields (no entry edited); then that the last entry is the head (none of
// the newest removed) and that the newest audit.pruned entry names the
// anchor (no old entry removed and hidden as retention). It stops at the
// first problem. Its error is for a log it could not read.
func Verify(ctx context.Context, r Reader) (Report, error) {
	head, err := r.AuditHeadGet(ctx)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Head: head}
	fail := func(id int64, format string, args ...any) (Report, error) {
		rep.BrokenID, rep.Problem = id, fmt.Sprintf(format, args...)
		return rep, nil
	}
	wantID, prev := head.AnchorID+1, head.AnchorHash
	var anchorNamed *pruned
	after := int64(0)
	for wantID <= head.LastID {
		page, err := r.AuditList(ctx, db.AuditFilter{}, after, verifyPage)
		if err != nil {
			return rep, err
		}
		if len(page) == 0 {
			break
		}
		for i := range page {
			e := &page[i]
			after = e.ID
			if e.ID > head.LastID {
				break
			}
			switch {
			case e.ID < wantID:
				return fail(e.ID, "entry %d is older than the anchor (entry %d): the anchor was moved", e.ID, head.AnchorID)
			case e.ID > wantID:
				return fail(wantID, "entry %d is missing (the next is %d): deleted", wantID, e.ID)
			case !bytes.Equal(e.PrevHash, prev):
				return fail(e.ID, "entry %d does not link to the entry before it: removed, replaced or re-linked", e.ID)
			case !bytes.Equal(Sum(e), e.Hash):
				return fail(e.ID, "entry %d does not match its hash: edited", e.ID)
			}
			if e.Action == ActionPruned {
				var p pruned
				if json.Unmarshal([]byte(e.After), &p) == nil {
					anchorNamed = &p
				}
			}
			rep.Count++
			wantID, prev = e.ID+1, e.Hash
		}
	}
	if wantID <= head.LastID {
		return fail(wantID, "entries %d to %d are missing (the head names %d): the newest were deleted", wantID, head.LastID, head.LastID)
	}
	if !bytes.Equal(prev, head.Hash) {
		return fail(head.LastID, "the head's hash is not entry %d's: the head or the newest entry was changed", head.LastID)
	}
	// An entry past the head is one appended since the head was read —
	// whose append moved the head in its transaction — or one the head was
	// set back over.
	if beyond, err := r.AuditList(ctx, db.AuditFilter{}, head.LastID, 1); err != nil {
		return rep, err
	} else if len(beyond) > 0 {
		now, err := r.AuditHeadGet(ctx)
		if err != nil {
			return rep, err
		}
		if now.LastID < beyond[0].ID {
			return fail(beyond[0].ID, "entry %d is past the head (entry %d): the head was set back", beyond[0].ID, now.LastID)
		}
	}
	if head.AnchorID > 0 {
		if anchorNamed == nil || anchorNamed.ThroughID != ID(head.AnchorID) || anchorNamed.ThroughHash != hex.EncodeToString(head.AnchorHash) {
			return fail(head.AnchorID+1, "the anchor (entry %d) is not the one the newest audit.pruned entry names: entries were removed outside retention", head.AnchorID)
		}
	}
	return rep, nil
}
