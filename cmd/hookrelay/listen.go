package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay/client"
)

// listenConfig is what `hookrelay listen` runs with.
type listenConfig struct {
	// BaseURL is the API's address (--url, else HOOKRELAY_URL, else
	// http://127.0.0.1:8080).
	BaseURL string
	// Key is a merchant key or the admin token (HOOKRELAY_API_KEY, else
	// HOOKRELAY_ADMIN_TOKEN): never a flag, so that it stays out of the
	// process list and the shell history.
	Key        string
	EndpointID string
	// ForwardTo is the local URL each event is POSTed to.
	ForwardTo string
	// CursorFile keeps the cursor of the last event acknowledged, so that
	// a restart resumes after it.
	CursorFile string
	Limit      int
	Wait       time.Duration
	// MaxBackoff bounds the pause after a failure (doubling from 1 s).
	MaxBackoff time.Duration
}

// runListen is `hookrelay listen`: it long-polls a poll endpoint's events,
// POSTs each to the local URL with its headers and body as a push would
// carry them, prints a line per event with the local answer, and
// acknowledges the events the local server accepted (2xx), in order: at the
// first refusal it stops, acknowledges what came before, and tries that
// event again after a pause (doubling, up to --max-backoff), so a key's
// events reach the local server in order.
func runListen(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd, _ := findCommand("listen")
	fs := flag.NewFlagSet("listen", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "the poll endpoint's id (required)")
	forward := fs.String("forward-to", "", "the local URL each event is POSTed to, such as http://localhost:3000/hook (required)")
	base := fs.String("url", "", "the hookrelay API's address (default HOOKRELAY_URL, else http://127.0.0.1:8080)")
	cursorFile := fs.String("cursor-file", "", "where the last acknowledged cursor is kept (default hookrelay-listen-<endpoint>.cursor in the working directory)")
	allowRemote := fs.Bool("allow-remote", false, "allow a --forward-to that is not on this machine (loopback)")
	limit := fs.Int("limit", 100, "events per pull (1 to 500)")
	wait := fs.Duration("wait", 20*time.Second, "how long a pull waits for events (up to 30s)")
	maxBackoff := fs.Duration("max-backoff", 30*time.Second, "the longest pause after a failure")
	if err := parseFlags(cmd, fs, args, stdout, stderr); err != nil {
		return err
	}
	cfg := listenConfig{
		BaseURL:    strings.TrimRight(cmp.Or(*base, getenv("HOOKRELAY_URL"), "http://127.0.0.1:8080"), "/"),
		Key:        cmp.Or(getenv("HOOKRELAY_API_KEY"), getenv("HOOKRELAY_ADMIN_TOKEN")),
		EndpointID: *endpoint, ForwardTo: *forward, CursorFile: *cursorFile,
		Limit: *limit, Wait: *wait, MaxBackoff: *maxBackoff,
	}
	if cfg.EndpointID == "" || cfg.ForwardTo == "" {
		return fmt.Errorf("%w: --endpoint and --forward-to are required", errUsage)
	}
	if _, err := strconv.ParseInt(cfg.EndpointID, 10, 64); err != nil {
		return fmt.Errorf("%w: --endpoint must be an endpoint id", errUsage)
	}
	if cfg.Key == "" {
		return fmt.Errorf("%w: set HOOKRELAY_API_KEY to a merchant key (or HOOKRELAY_ADMIN_TOKEN to the admin token)", errUsage)
	}
	if cfg.Limit < 1 || cfg.Limit > 500 || cfg.Wait < 0 || cfg.Wait > 30*time.Second || cfg.MaxBackoff < time.Second {
		return fmt.Errorf("%w: --limit 1 to 500, --wait 0 to 30s, --max-backoff at least 1s", errUsage)
	}
	if err := checkForwardTo(cfg.ForwardTo, *allowRemote); err != nil {
		return err
	}
	if cfg.CursorFile == "" {
		cfg.CursorFile = "hookrelay-listen-" + cfg.EndpointID + ".cursor"
	}
	return listen(ctx, cfg, stdout)
}

// checkForwardTo refuses a forward URL that is not http(s) on a loopback
// host unless allowRemote: events carry real customers' data, and the
// command is for a developer's own machine.
func checkForwardTo(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: --forward-to must be an http:// or https:// URL", errUsage)
	}
	if allowRemote {
		return nil
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: --forward-to %s is not on this machine (loopback); add --allow-remote to forward events there", errUsage, u.Host)
}

// errListenFatal marks an answer of the API that retrying cannot change
// (bad key, no such endpoint, a push endpoint).
var errListenFatal = errors.New("hookrelay refused")

func listen(ctx context.Context, cfg listenConfig, out io.Writer) error {
	cursor, err := readCursor(cfg.CursorFile)
	if err != nil {
		return err
	}
	key := cfg.Key
	api, err := client.NewClientWithResponses(cfg.BaseURL,
		client.WithHTTPClient(&http.Client{Timeout: cfg.Wait + 30*time.Second}),
		client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	if err != nil {
		return fmt.Errorf("%w: --url: %v", errUsage, err)
	}
	local := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	fmt.Fprintf(out, "listening to endpoint %s at %s, forwarding to %s (cursor file %s)\n",
		cfg.EndpointID, cfg.BaseURL, cfg.ForwardTo, cfg.CursorFile)
	backoff := time.Second
	pause := func(why string) error {
		fmt.Fprintf(out, "%s; trying again in %s\n", why, backoff)
		t := time.NewTimer(backoff)
		defer t.Stop()
		backoff = min(2*backoff, cfg.MaxBackoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	}
	for ctx.Err() == nil {
		events, err := listenPull(ctx, api, cfg, cursor)
		if errors.Is(err, errListenFatal) {
			return err
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if err := pause("pull failed: " + err.Error()); err != nil {
				break
			}
			continue
		}
		accepted := ""
		var failed bool
		for _, ev := range events {
			status, took, ferr := forward(ctx, local, cfg.ForwardTo, ev)
			line := fmt.Sprintf("%s %s %s key=%s → ", time.Now().Format("15:04:05"), ev.Id, ev.EventType, ev.OrderingKey)
			if ferr != nil {
				fmt.Fprintf(out, "%s%v\n", line, ferr)
				failed = true
				break
			}
			fmt.Fprintf(out, "%s%d (%s)\n", line, status, took.Round(time.Millisecond))
			if status < 200 || status > 299 {
				failed = true
				break
			}
			accepted = ev.Cursor
		}
		if accepted != "" {
			if err := listenAck(ctx, api, cfg, accepted); err != nil {
				if errors.Is(err, errListenFatal) {
					return err
				}
				// Not acknowledged: the events come again.
				if err := pause("acknowledgement failed: " + err.Error()); err != nil {
					break
				}
				continue
			}
			cursor = accepted
			if err := writeCursor(cfg.CursorFile, cursor); err != nil {
				return err
			}
		}
		if failed {
			if err := pause("the local server did not accept the event"); err != nil {
				break
			}
			continue
		}
		backoff = time.Second
	}
	fmt.Fprintln(out, "stopped")
	return nil
}

// listenPull fetches the events after cursor.
func listenPull(ctx context.Context, c *client.ClientWithResponses, cfg listenConfig, cursor string) ([]client.PullEvent, error) {
	limit, wait := cfg.Limit, cfg.Wait.String()
	p := &client.EndpointEventsPullParams{Limit: &limit, Wait: &wait}
	if cursor != "" {
		p.Cursor = &cursor
	}
	resp, err := c.EndpointEventsPullWithResponse(ctx, cfg.EndpointID, p)
	if err != nil {
		return nil, err
	}
	if resp.JSON200 == nil {
		return nil, listenRefusal("pull", resp.HTTPResponse, resp.JSONDefault)
	}
	return resp.JSON200.Items, nil
}

// listenAck acknowledges every event up to cursor.
func listenAck(ctx context.Context, c *client.ClientWithResponses, cfg listenConfig, cursor string) error {
	resp, err := c.EndpointEventsAckWithResponse(ctx, cfg.EndpointID, client.EndpointEventsAckJSONRequestBody{Cursor: cursor})
	if err != nil {
		return err
	}
	if resp.JSON200 == nil {
		return listenRefusal("acknowledge", resp.HTTPResponse, resp.JSONDefault)
	}
	return nil
}

// listenRefusal is the error of an answer other than 200: errListenFatal
// for a 4xx other than 408 and 429 (retrying cannot change it).
func listenRefusal(what string, resp *http.Response, e *client.ErrorResponse) error {
	msg := fmt.Sprintf("%s: %d %s", what, resp.StatusCode, http.StatusText(resp.StatusCode))
	if e != nil && e.Error.Message != "" {
		msg = fmt.Sprintf("%s: %d %s", what, resp.StatusCode, e.Error.Message)
	}
	if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
		return fmt.Errorf("%w: %s", errListenFatal, msg)
	}
	return errors.New(msg)
}

// forward POSTs an event to the local URL with its headers and body, and
// returns the answer's status and how long it took.
func forward(ctx context.Context, c *http.Client, to string, ev client.PullEvent) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to, bytes.NewReader(ev.Body))
	if err != nil {
		return 0, 0, err
	}
	for name, v := range ev.Headers {
		req.Header.Set(name, v)
	}
	req.Header.Set("User-Agent", "hookrelay-listen/"+version)
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, time.Since(start), err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), nil
}

// readCursor returns the cursor kept in path ("" when there is none yet).
func readCursor(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read cursor file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// writeCursor replaces path with cursor (write and rename: a crash leaves
// the old cursor or the new one, never a torn one).
func writeCursor(path, cursor string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hookrelay-listen-*")
	if err != nil {
		return fmt.Errorf("write cursor file: %w", err)
	}
	if _, err := tmp.WriteString(cursor + "\n"); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write cursor file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write cursor file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write cursor file: %w", err)
	}
	return nil
}
