package main

import (
	"strings"
	"testing"
)

// FuzzLoadConfig feeds arbitrary values to variables of every kind: loading
// must never panic, an accepted configuration is within bounds, and the admin
// token's value is never echoed.
func FuzzLoadConfig(f *testing.F) {
	f.Add("30s", "8192", "true", "postgres://u@h:5432/db", "127.0.0.1:8080", "hra_0123456789abcdef")
	f.Add("-1h", "-5", "maybe", "mysql://x", ":::", "short")
	f.Add("", "", "", "", "", "")
	f.Add("1e9h", "99999999999999999999", "TRUE", "postgres://:@/", "host:0", "x")
	f.Fuzz(func(t *testing.T, dur, num, boolean, dbURL, addr, token string) {
		env := map[string]string{
			"HOOKRELAY_LEASE":                 dur,
			"HOOKRELAY_RETENTION":             dur,
			"HOOKRELAY_OFFLOAD_BYTES":         num,
			"HOOKRELAY_QUEUES":                num,
			"HOOKRELAY_ALLOW_PRIVATE_TARGETS": boolean,
			"DATABASE_URL":                    dbURL,
			"HOOKRELAY_ADDR":                  addr,
			"HOOKRELAY_ADMIN_TOKEN":           token,
			// Role settings are loaded with the rest.
			"HOOKRELAY_DISPATCH_BATCH":             num,
			"HOOKRELAY_VACUUM_INTERVAL":            dur,
			"HOOKRELAY_VACUUM_DEAD_SPACE_PERMILLE": num,
			"HOOKRELAY_UI_SECURE_COOKIE":           boolean,
		}
		c, err := loadConfig(func(k string) string { return env[k] })
		if err != nil {
			if strings.Contains(err.Error(), "HOOKRELAY_ADMIN_TOKEN=") {
				t.Fatalf("error echoes the admin token: %v", err)
			}
			return
		}
		if c.Dispatch.Queues < 1 || c.Dispatch.Lease <= 0 || c.API.OffloadBytes > c.API.MaxBodyBytes ||
			c.Dispatch.BatchSize < 1 || c.Maintenance.VacuumInterval <= 0 ||
			c.Maintenance.VacuumDeadSpace <= 0 || c.Maintenance.VacuumDeadSpace > 0.5 {
			t.Fatalf("accepted an invalid configuration: %+v", c)
		}
	})
}
