package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// Credentials that Embedded.Config hands out. The embedded server does not
// check signatures, so they only have to be well-formed.
const (
	embeddedAccessKey = "hookrelay"
	embeddedSecretKey = "hookrelay-embedded"
)

const (
	// embeddedLockTimeout bounds waiting for the data directory's lock,
	// held by another process serving the same directory.
	embeddedLockTimeout = time.Second
	// embeddedMaxBody caps a request body; payloads are at most 10 MiB.
	embeddedMaxBody = 64 << 20
	// embeddedShutdownTimeout bounds waiting for in-flight requests on Close.
	embeddedShutdownTimeout = 5 * time.Second
)

// Embedded is an S3-compatible server running inside the process, so that a
// single binary needs no external object store. Each object is a file under
// the data directory, <dir>/<bucket>/<key>: it is written to a temporary
// file, synced and renamed into place, and the directory synced, before the
// PUT is acknowledged, so objects survive a crash, a restart or a power loss.
//
// It answers the S3 calls Store makes over HTTP on its own listener. It does
// not check credentials or the signature and expiry of presigned URLs: anyone
// who can reach its address can read and write every object, so bind it to
// loopback.
type Embedded struct {
	logger  *slog.Logger
	backend *diskBackend
	srv     *http.Server
	url     string
	// served is closed when the server goroutine has returned.
	served chan struct{}

	// directMu is held for reading by the direct Put and Get of Stores
	// from NewStore while they use backend, and for writing by Close to
	// set closed, so Close waits for them before releasing the directory.
	directMu sync.RWMutex
	// closed is set by Close; direct calls fail from then on.
	closed bool

	// idleNew holds the server's connections that have not sent a request
	// yet (http.StateNew), which Close cuts at once: Shutdown waits up to
	// 5 s for each, and an HTTP client often holds one it dialed for a
	// request that another connection served.
	idleNewMu sync.Mutex
	idleNew   map[net.Conn]struct{}

	closeOnce sync.Once
	closeErr  error
}

// StartEmbedded opens dir, creating it if needed, and serves S3 on addr, such
// as "127.0.0.1:9000", or "127.0.0.1:0" for any free port. ctx bounds start-up
// only: the server runs until Close. Only one process at a time may serve a
// directory; another one fails to start.
func StartEmbedded(ctx context.Context, logger *slog.Logger, addr string, dir string) (*Embedded, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	backend, err := openDiskBackend(dir, embeddedLockTimeout)
	if err != nil {
		return nil, fmt.Errorf("embedded s3: open %s: %w", dir, err)
	}

	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("embedded s3: %w", err), backend.Close())
	}

	faker := gofakes3.New(backend, gofakes3.WithLogger(fakeS3Logger{logger}))
	e := &Embedded{
		logger:  logger,
		backend: backend,
		url:     "http://" + reachableAddr(ln.Addr()),
		served:  make(chan struct{}),
		idleNew: map[net.Conn]struct{}{},
	}
	e.srv = &http.Server{
		Handler:           http.MaxBytesHandler(faker.Server(), embeddedMaxBody),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ConnState:         e.trackNew,
	}
	go e.serve(ln)
	return e, nil
}

// serve runs the HTTP server until Close.
func (e *Embedded) serve(ln net.Listener) {
	defer close(e.served)
	if err := e.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		e.logger.Error("embedded s3 server stopped", "err", err)
	}
}

// URL returns the server's base URL, such as "http://127.0.0.1:9000".
func (e *Embedded) URL() string { return e.url }

// Config returns a Config that reaches this server with the default bucket.
func (e *Embedded) Config() Config {
	return Config{
		Endpoint:     e.url,
		Bucket:       DefaultBucket,
		Region:       DefaultRegion,
		AccessKey:    embeddedAccessKey,
		SecretKey:    embeddedSecretKey,
		UsePathStyle: true,
	}
}

// Close stops accepting requests, waits up to a few seconds for those in
// flight, and releases the data directory. Direct calls of Stores from
// NewStore fail from then on; Close waits for those in flight. It is safe to
// call more than once.
func (e *Embedded) Close() error {
	e.closeOnce.Do(func() {
		e.directMu.Lock()
		e.closed = true
		e.directMu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), embeddedShutdownTimeout)
		defer cancel()
		// Cut the connections that never sent a request while Shutdown
		// waits for the others (until it has closed the listener, new ones
		// may still arrive).
		stop, cut := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(cut)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				e.cutNew()
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		shutdownErr := e.srv.Shutdown(ctx)
		close(stop)
		<-cut
		if shutdownErr != nil {
			// Cut the requests that did not finish in time.
			shutdownErr = errors.Join(shutdownErr, e.srv.Close())
		}
		<-e.served
		e.closeErr = errors.Join(shutdownErr, e.backend.Close())
		if e.closeErr != nil {
			e.closeErr = fmt.Errorf("embedded s3: close: %w", e.closeErr)
		}
	})
	return e.closeErr
}

// trackNew is the server's ConnState hook: it keeps the connections that
// have not sent a request yet.
func (e *Embedded) trackNew(c net.Conn, state http.ConnState) {
	e.idleNewMu.Lock()
	defer e.idleNewMu.Unlock()
	if state == http.StateNew {
		e.idleNew[c] = struct{}{}
	} else {
		delete(e.idleNew, c)
	}
}

// cutNew closes the connections that have not sent a request yet.
func (e *Embedded) cutNew() {
	e.idleNewMu.Lock()
	defer e.idleNewMu.Unlock()
	for c := range e.idleNew {
		_ = c.Close()
		delete(e.idleNew, c)
	}
}

// reachableAddr returns addr as host:port that a client can dial: an
// unspecified listen address (0.0.0.0 or ::) becomes loopback.
func reachableAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	host := "127.0.0.1"
	if tcp.IP.To4() == nil {
		host = "::1"
	}
	return net.JoinHostPort(host, fmt.Sprint(tcp.Port))
}
