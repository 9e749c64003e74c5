package sso

import "time"

// SetClock makes c read the time from now; call it before c's first use.
func SetClock(c *Client, now func() time.Time) { c.now = now }
