package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// HealthServer serves /metrics, /healthz (the process is alive) and /readyz
// (the stream is consuming and its sinks accept writes; false while
// starting, after a failed broker connection or authentication, and from the
// moment shutdown begins).
type HealthServer struct {
	srv *http.Server
	ln  net.Listener
}

// StartHealthServer listens on addr and serves until Close.
func StartHealthServer(addr string, gatherer prometheus.Gatherer, ready func() bool) (*HealthServer, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready() {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("ready\n"))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready\n"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http.listen: %w", err)
	}
	h := &HealthServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

// Addr is the address the server listens on.
func (h *HealthServer) Addr() string { return h.ln.Addr().String() }

// Close stops the server.
func (h *HealthServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("close http: %w", err)
	}
	return nil
}
