package hookrelay_test

import (
	"testing"

	"github.com/hookrelay/hookrelay"
)

func TestReplayChainRoundTrip(t *testing.T) {
	for _, key := range []string{"A1", "", "a\x01b", "ü"} {
		chain := hookrelay.ReplayChain(key)
		if got, replayed := hookrelay.ChainKey(chain); got != key || !replayed {
			t.Errorf("ChainKey(ReplayChain(%q)) = %q, %v", key, got, replayed)
		}
		if key == "" {
			continue
		}
		if got, replayed := hookrelay.ChainKey(key); got != key || replayed {
			t.Errorf("ChainKey(%q) = %q, %v; want the key, live", key, got, replayed)
		}
		if err := hookrelay.CheckOrderingKey("k", key, 100); err != nil {
			t.Errorf("CheckOrderingKey(%q) = %v", key, err)
		}
		if err := hookrelay.CheckOrderingKey("k", chain, 100); hookrelay.CodeOf(err) != hookrelay.EINVALID {
			t.Errorf("CheckOrderingKey(%q) = %v; want EINVALID: a live key cannot be a replay chain", chain, err)
		}
	}
}
