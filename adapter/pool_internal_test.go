package adapter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStoppedRuntimeIsDropped: a runtime a call was stopped in never goes
// back to the idle ones; a runtime whose call ended normally (an event, a
// drop, the adapter's own error) does.
func TestStoppedRuntimeIsDropped(t *testing.T) {
	t.Parallel()
	p, err := Compile(`function transform(c) {
	if (c.body.loop) { for (;;) {} }
	if (c.body.deep) { const f = () => f(); f(); }
	if (c.body.fail) { throw new Error("no"); }
	return c.body.drop ? null : {type: "t", data: {}};
}`, Limits{CPUTime: 50 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, p.idle, 1, "the trial runtime of Compile")
	first := <-p.idle
	p.idle <- first

	run := func(body string) error {
		_, _, err := p.Run(context.Background(), Input{Body: []byte(body)})
		return err
	}
	require.NoError(t, run(`{}`))
	require.NoError(t, run(`{"drop": true}`))
	require.Error(t, run(`{"fail": true}`))
	require.Len(t, p.idle, 1)
	v := <-p.idle
	require.Same(t, first, v, "the same runtime served every clean call")
	p.idle <- v

	for _, body := range []string{`{"loop": true}`, `{"deep": true}`} {
		require.ErrorIs(t, run(body), ErrLimit)
		require.Empty(t, p.idle, "the stopped runtime was dropped")
		require.NoError(t, run(`{}`)) // a new runtime, then idle
		require.Len(t, p.idle, 1)
		v := <-p.idle
		require.NotSame(t, first, v)
		first = v
		p.idle <- v
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = p.Run(ctx, Input{Body: []byte(`{}`)})
	require.Error(t, err)
	require.Len(t, p.idle, 1, "a call refused before it started takes no runtime")
}
