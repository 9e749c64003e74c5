package db

// SetAckStallHook sets what DeliveryAckBatch runs between its statements
// (nil: nothing) and returns a function restoring the previous hook.
func SetAckStallHook(f func()) (restore func()) {
	prev := ackStallHook
	ackStallHook = f
	return func() { ackStallHook = prev }
}
