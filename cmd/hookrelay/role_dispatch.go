package main

import "context"

// startDispatch wires the dispatch role. (Filled in by the dispatch work.)
func startDispatch(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	return nil, nil
}
