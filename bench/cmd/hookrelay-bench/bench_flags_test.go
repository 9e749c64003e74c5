package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBenchFlagErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--rates", "fast"},
		{"--phases", "max,soak"},
		{"--target", "http://127.0.0.1:1"},
		{"--sink-failure-rate", "1"},
		{"--keys", "0"},
		{"--dispatchers", "-1"},
		{"--day-peak-share", "0.1"},
		{"--idle", "0s"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"hookrelay-bench"}, args...), func(string) string { return "" }, &out, &errOut)
		require.ErrorIs(t, err, errUsage, "%v", args)
	}
}
