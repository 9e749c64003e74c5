package hookrelay

import (
	"net/netip"
	"testing"
)

func TestTargetAllowed(t *testing.T) {
	t.Parallel()
	blocked := []string{
		"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254",
		"0.0.0.0", "100.64.0.1", "::1", "::", "fc00::1", "fd12:3456::1", "fe80::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "224.0.0.1", "ff02::1",
	}
	for _, s := range blocked {
		if TargetAllowed(netip.MustParseAddr(s)) {
			t.Errorf("%s allowed, want blocked", s)
		}
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "93.184.216.34"} {
		if !TargetAllowed(netip.MustParseAddr(s)) {
			t.Errorf("%s blocked, want allowed", s)
		}
	}
	if TargetAllowed(netip.Addr{}) {
		t.Error("the zero address is allowed")
	}
}

func TestQueueForStableAndInRange(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for i := 0; i < 10000; i++ {
		k := "SF" + string(rune('A'+i%26)) + string(rune('0'+i%10)) + string(rune(i))
		q := QueueFor(k, 32)
		if q < 0 || q >= 32 {
			t.Fatalf("queue %d out of range", q)
		}
		if QueueFor(k, 32) != q {
			t.Fatal("not stable")
		}
		seen[q] = true
	}
	if len(seen) != 32 {
		t.Fatalf("only %d of 32 queues used", len(seen))
	}
	// Pinned values: changing the function would re-route keys of live data.
	if got := QueueFor("SF1234567890", 32); got != QueueFor("SF1234567890", 32) || got != pinned {
		t.Fatalf("QueueFor(SF1234567890) = %d, want %d", got, pinned)
	}
}

const pinned = 5
