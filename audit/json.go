package audit

import (
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// JSONEntry is an entry as the export (GET /v1/audit-log) and the
// audit.entry event show it. Ids are decimal strings, as elsewhere in the
// API; 0 ids are left out.
type JSONEntry struct {
	ID         string          `json:"id"`
	At         time.Time       `json:"at"`
	Actor      JSONActor       `json:"actor"`
	Action     string          `json:"action"`
	TargetType string          `json:"target_type,omitempty"`
	TargetID   string          `json:"target_id,omitempty"`
	Before     json.RawMessage `json:"before,omitempty"`
	After      json.RawMessage `json:"after,omitempty"`
	Result     string          `json:"result"`
	Error      string          `json:"error,omitempty"`
	PrevHash   string          `json:"prev_hash"`
	Hash       string          `json:"hash"`
}

// JSONActor is who acted.
type JSONActor struct {
	Kind       string `json:"kind"`
	Role       string `json:"role,omitempty"`
	UserID     string `json:"user_id,omitempty"`
	TokenID    string `json:"token_id,omitempty"`
	SessionID  string `json:"session_id,omitempty"`
	MerchantID string `json:"merchant_id,omitempty"`
	CarrierID  string `json:"carrier_id,omitempty"`
	Name       string `json:"name,omitempty"`
	Addr       string `json:"addr,omitempty"`
	UserAgent  string `json:"user_agent,omitempty"`
}

func optID(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// View returns e as the export shows it.
func View(e db.AuditEntry) JSONEntry {
	return JSONEntry{
		ID: ID(e.ID), At: e.At.UTC(),
		Actor: JSONActor{Kind: e.ActorKind, Role: e.ActorRole, UserID: optID(e.ActorUserID), TokenID: optID(e.ActorTokenID),
			SessionID: optID(e.ActorSessionID), MerchantID: optID(e.ActorMerchantID), CarrierID: optID(e.ActorCarrierID),
			Name: e.ActorName, Addr: e.Addr, UserAgent: e.UserAgent},
		Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID, Before: raw(e.Before), After: raw(e.After),
		Result: e.Result, Error: e.Error, PrevHash: hex.EncodeToString(e.PrevHash), Hash: hex.EncodeToString(e.Hash),
	}
}

// EventData is the data of e's audit.entry operational webhook event: the
// entry as the export shows it.
func EventData(e *db.AuditEntry) []byte {
	b, _ := json.Marshal(View(*e))
	return b
}
