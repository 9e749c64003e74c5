package main

import (
	"context"
	"errors"
	"io"
)

func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return errors.New("bench: not implemented yet")
}
