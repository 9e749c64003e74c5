// Package maintenance is the maintenance role: it keeps the database healthy
// under churn and keeps history bounded. One process at a time holds the role
// (a session advisory lock on a dedicated connection); the others stand by and
// take over within Config.LockRetry when the holder's connection goes away.
//
// The holder
//   - creates day partitions ahead and detaches and drops those past retention
//     (never a row-by-row DELETE), with their S3 payload prefix (retention.go);
//   - VACUUMs the hot tables whenever their dead tuples pass a threshold,
//     because autovacuum's one-minute naptime is too slow for a queue table
//     (vacuum.go);
//   - samples table and cluster health into hookrelay_db_* metrics and warns
//     about long transactions (health.go);
//   - writes a stat sample for the dashboard charts every ~10 s (stats.go);
//   - carries out the replays asked for through the API, a bounded batch at
//     a time (replays.go).
package maintenance
