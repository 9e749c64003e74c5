package main

import "context"

// startAPI wires the api role. (Filled in by the api work.)
func startAPI(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	return nil, nil
}
