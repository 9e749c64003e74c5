package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

func TestNew(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, testenv.Options{AdminToken: "hra_test_admin_token_testenv", LogLevel: slog.LevelDebug})
	ctx := t.Context()
	stored, err := env.DB.SettingPutIfAbsent(ctx, db.AdminTokenSetting, "x")
	require.NoError(t, err)
	require.False(t, stored, "the admin token is set")
	require.NotEmpty(t, env.DBURL)
	_, err = env.Payloads.Put(ctx, "payloads/x", []byte("x"))
	require.NoError(t, err)
	got, err := env.Payloads.Get(ctx, "payloads/x")
	require.NoError(t, err)
	require.Equal(t, []byte("x"), got)
	env.Logger.Debug("hello")
	require.Contains(t, env.Logs.String(), `"msg":"hello"`)
}

func TestEventually(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	go func() {
		for range 3 {
			time.Sleep(5 * time.Millisecond) // a producer's pace
			n.Add(1)
		}
	}()
	testenv.Eventually(t, 10*time.Second, "three", func() bool { return n.Load() == 3 })
	testenv.EventuallyErr(t, 10*time.Second, func() error {
		if n.Load() != 3 {
			return fmt.Errorf("%d of 3", n.Load())
		}
		return nil
	})
}

func TestWaitFor(t *testing.T) {
	t.Parallel()
	ch := make(chan int, 1)
	ch <- 7
	require.Equal(t, 7, testenv.WaitFor(t, ch, time.Second, "a value"))
}

func TestGo(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	stop := testenv.Go(t, "the worker", func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return errors.New("stopped")
	})
	testenv.WaitFor(t, started, 10*time.Second, "the worker")
	require.EqualError(t, stop(), "stopped")
	require.EqualError(t, stop(), "stopped", "stop returns the same error again")
}
