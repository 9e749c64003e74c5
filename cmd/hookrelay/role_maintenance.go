package main

import "context"

// startMaintenance wires the maintenance role. (Filled in by the maintenance work.)
func startMaintenance(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	return nil, nil
}
