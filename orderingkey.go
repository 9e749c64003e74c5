package hookrelay

import (
	"strings"
)

// ReplayChainMark begins the chain value of a replayed delivery. A
// delivery's row in the queue carries its chain in its ordering key column:
// live deliveries the message's ordering key, replayed ones this mark
// followed by it, so that each (endpoint, key) has a live chain and a
// replay chain of its own, ordered and claimed alike, neither waiting for
// the other. Ingest refuses ordering keys that begin with it (CheckOrderingKey),
// so no live key can fall into a replay chain.
const ReplayChainMark = "\x01"

// CheckOrderingKey is CheckText for an ordering key, which also must not
// begin with ReplayChainMark (U+0001, reserved).
func CheckOrderingKey(field, key string, max int) error {
	if err := CheckText(field, key, max); err != nil {
		return err
	}
	if strings.HasPrefix(key, ReplayChainMark) {
		return Errorf(EINVALID, "%s must not begin with the control character U+0001 (reserved)", field)
	}
	return nil
}

// ReplayChain returns the chain value of a replayed delivery of key.
func ReplayChain(key string) string { return ReplayChainMark + key }

// ChainKey returns the ordering key of a chain value, and whether the chain
// is a replay chain.
func ChainKey(chain string) (key string, replayed bool) {
	if k, ok := strings.CutPrefix(chain, ReplayChainMark); ok {
		return k, true
	}
	return chain, false
}
