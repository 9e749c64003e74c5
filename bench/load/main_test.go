package load

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind (sink
// servers, load generator workers, idle HTTP connections).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
