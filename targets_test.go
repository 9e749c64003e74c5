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

// TestTargetAllowedEmbeddedIPv4 judges every IPv6 form that carries an IPv4
// address by the address it carries: a private or loopback one is refused,
// a public one is allowed.
func TestTargetAllowedEmbeddedIPv4(t *testing.T) {
	t.Parallel()
	cases := []struct {
		form, addr string
		allowed    bool
	}{
		{"mapped", "::ffff:127.0.0.1", false},
		{"mapped", "::ffff:8.8.8.8", true},
		{"compatible", "::127.0.0.1", false},
		{"compatible", "::10.1.2.3", false},
		{"compatible", "::a9fe:a9fe", false},
		{"compatible", "::8.8.8.8", true},
		{"SIIT", "::ffff:0:7f00:1", false},
		{"SIIT", "::ffff:0:192.168.0.1", false},
		{"SIIT", "::ffff:0:808:808", true},
		{"6to4", "2002:7f00:1::1", false},
		{"6to4", "2002:a9fe:a9fe::", false},
		{"6to4", "2002:ac10:1:1::1", false},
		{"6to4", "2002:808:808::1", true},
		// Teredo: server in bits 32-63, client XOR 0xffffffff in bits 96-127.
		{"Teredo client loopback", "2001:0:808:808::80ff:fffe", false},
		{"Teredo client private", "2001:0:808:808::f5ff:fffe", false},
		{"Teredo server private", "2001:0:a00:1::f7f7:f7f7", false},
		{"Teredo public", "2001:0:808:808::f7f7:f7f7", true},
		{"NAT64 well-known", "64:ff9b::7f00:1", false},
		{"NAT64 well-known", "64:ff9b::169.254.169.254", false},
		{"NAT64 well-known", "64:ff9b::808:808", true},
		{"NAT64 local-use /96", "64:ff9b:1::7f00:1", false},
		{"NAT64 local-use /48", "64:ff9b:1:7f00:0:100::", false},
		{"NAT64 local-use /64", "64:ff9b:1:0:a:0:100::", false},
		{"NAT64 local-use, public at every length", "64:ff9b:1:808:808:808:808:808", true},
		{"NAT64 local-use, unspecified at /48", "64:ff9b:1::808:808", false},
		{"plain global", "2606:4700:4700::1111", true},
	}
	for _, c := range cases {
		if got := TargetAllowed(netip.MustParseAddr(c.addr)); got != c.allowed {
			t.Errorf("%s %s: allowed = %v, want %v", c.form, c.addr, got, c.allowed)
		}
	}
}

// FuzzTargetAllowed: the judge never panics, and an address it allows is
// neither internal itself nor carries an internal IPv4 address in any of
// the embeddings (decoded here independently of targets.go).
func FuzzTargetAllowed(f *testing.F) {
	for _, s := range []string{
		"::127.0.0.1", "::ffff:0:7f00:1", "2002:7f00:1::1", "2001:0:808:808::80ff:fffe",
		"64:ff9b::7f00:1", "64:ff9b:1:7f00:0:100::", "2606:4700:4700::1111", "8.8.8.8", "::ffff:10.0.0.1",
	} {
		f.Add(netip.MustParseAddr(s).AsSlice())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		if !TargetAllowed(ip) {
			return
		}
		for _, a := range append([]netip.Addr{ip}, embeddedByHand(ip.As16())...) {
			if internal(a) {
				t.Fatalf("%s allowed, but it is or embeds the internal address %s", ip, a)
			}
		}
	})
}

// internal reports addresses no public endpoint may use, by the standard
// library's classification rather than targets.go's table.
func internal(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() ||
		(a.Is4() && (a.As4()[0] == 0 || a.As4()[0] == 127))
}

// embeddedByHand decodes the IPv4 embeddings from the raw bytes.
func embeddedByHand(b [16]byte) []netip.Addr {
	v4 := func(i, j, k, l int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]}) }
	zero := func(from, to int) bool {
		for _, x := range b[from:to] {
			if x != 0 {
				return false
			}
		}
		return true
	}
	var out []netip.Addr
	if zero(0, 10) && ((b[10] == 0 && b[11] == 0) || (b[10] == 0xff && b[11] == 0xff)) {
		out = append(out, v4(12, 13, 14, 15)) // compatible, mapped
	}
	if zero(0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0 {
		out = append(out, v4(12, 13, 14, 15)) // SIIT
	}
	if b[0] == 0x20 && b[1] == 0x02 {
		out = append(out, v4(2, 3, 4, 5)) // 6to4
	}
	if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0 {
		out = append(out, v4(4, 5, 6, 7), netip.AddrFrom4([4]byte{b[12] ^ 0xff, b[13] ^ 0xff, b[14] ^ 0xff, b[15] ^ 0xff}))
	}
	if b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(4, 12) {
		out = append(out, v4(12, 13, 14, 15)) // NAT64 well-known
	}
	if b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1 {
		out = append(out, v4(6, 7, 9, 10), v4(7, 9, 10, 11), v4(9, 10, 11, 12), v4(12, 13, 14, 15))
	}
	return out
}
