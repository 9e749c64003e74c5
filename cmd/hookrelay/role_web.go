package main

import "context"

// startWeb wires the web role. (Filled in by the web work.)
func startWeb(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	return nil, nil
}
