// Package audit keeps the audit log: who did what, to what, when, from
// where and with what result — every change and operator action (from the
// API, the dashboard, the portal and the command line), the dashboard's
// logins, logouts and failed logins, and every reading of a message body.
//
// # Recording
//
// An action records itself with one call that passes its error. In package
// ops, a change with named results opens its unit of work and defers the
// call, so that every return, a refusal included, is recorded with its
// result:
//
//	func (s *Service) DeleteUser(ctx context.Context, id int64) (err error) {
//		ctx, done := s.unit(ctx)
//		defer func() {
//			err = done(audit.Entry{Action: "user.delete", TargetType: "user", TargetID: audit.ID(id)}, err)
//		}()
//		...
//
// done commits the change with its entry and returns the action's error
// unchanged, or the audit log's when the entry could not be written (the
// change then rolled back); a failed action's entry has no After. A read
// uses Service.record, which writes the entry alone. Elsewhere (the dashboard's logins,
// the command line) call Log.Record, or ops.Service.Record, with
// Entry.Result(err). Actions are named "<target>.<verb>" in lower case
// ("carrier.rotate_key", "dead_letters.retry", "message.read",
// "login.failed"). The actor is the principal in ctx (access.FromContext);
// a context without one is the service itself (access.KindSystem: the
// command line, a background job); Entry.Actor overrides both (a login,
// before its session exists). Before and After are any JSON-encodable
// values (the configuration as it was and as it is, or an action's
// parameters); Record redacts every secret in them by field name (Redact)
// before they are stored, so passing a whole db.Endpoint or db.Carrier is
// safe.
//
// # Failure policy
//
// A change and its entry commit together: package ops runs each change in a
// unit of work (db.BeginUnit) and appends its entry in the same
// transaction, in one pipeline with its COMMIT, so an entry costs no commit
// or round trip of its own, and a change whose entry cannot be written is
// rolled back and fails (hookrelay.EUNAVAILABLE, "the change could not be
// committed with its audit log entry"): nothing is done unrecorded. A refused or failed action is recorded apart, after its
// rollback, with its result ("invalid", "not_found"...); when that entry
// cannot be written either, the action's own error is returned. A read of
// a message body is recorded in a transaction of its own before the body
// is returned, and fails without it. Writes do not end with the request's
// context: a client that goes away mid-action leaves nothing unrecorded.
//
// # The chain
//
// Each entry carries the hash of the one before (PrevHash) and its own:
// SHA-256(PrevHash || the canonical encoding of its fields, Encode). Appends
// are serialized by a one-row head (audit_head) locked in the transaction of
// the insert, which also holds the newest id and hash, so the chain is a
// line and ids have no gaps. The append is one statement
// (hookrelay_audit_append): it takes the head's lock and hashes the entry
// in PostgreSQL, over the same encoding, which Verify checks with Sum. Verify walks the retained log from its anchor
// (the last entry retention dropped, recorded in the head and in the
// audit.pruned entry written in the drop's transaction) to the head, and
// names the first entry that was edited, removed or re-linked.
//
// # What the chain detects
//
// Someone with write access to the database who edits an entry, deletes
// one, or deletes the newest ones, is found by the next verification: the
// entry's hash, the next entry's link, the id sequence or the head gives
// it away. Someone who also rewrites every later entry and the head (or
// empties the log and resets the head, or moves the anchor and the
// audit.pruned entry that names it) leaves a chain that verifies: the log
// alone cannot tell. Only a head hash kept outside the database catches
// that — the audit.entry stream to an operational webhook, or the output of
// a periodic `hookrelay audit verify --print-head` kept elsewhere: a head
// seen there that is no longer an entry of the chain, with that hash, is a
// rewrite. Nor does the chain make anything unreadable: the entries are
// plain rows that database readers see (secrets are redacted before they
// get there).
package audit
