package alert

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// receiver is an Alertmanager-style webhook receiver on loopback. It
// answers the first failFirst posts with 503.
type receiver struct {
	*httptest.Server
	posts    chan Payload
	attempts atomic.Int64
}

func newReceiver(t *testing.T, failFirst int64) *receiver {
	t.Helper()
	r := &receiver{posts: make(chan Payload, 16)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.attempts.Add(1) <= failFirst {
			http.Error(w, "not now", http.StatusServiceUnavailable)
			return
		}
		var p Payload
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" ||
			json.NewDecoder(req.Body).Decode(&p) != nil {
			http.Error(w, "bad post", http.StatusBadRequest)
			return
		}
		r.posts <- p
	}))
	t.Cleanup(r.Close)
	return r
}

// next waits for the next accepted post; the bound only stops a broken
// test from hanging.
func (r *receiver) next(t *testing.T) Payload {
	t.Helper()
	select {
	case p := <-r.posts:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook post arrived")
		return Payload{}
	}
}

func change(rule, name string, resolved bool) []Change {
	return []Change{{Alert: Alert{Rule: rule, Name: name, Severity: SeverityWarning, Since: t0, Message: "m"},
		Resolved: resolved, At: t0.Add(time.Minute)}}
}

// A receiver that fails twice gets the post on the third attempt.
func TestWebhookRetriesThenDelivers(t *testing.T) {
	rcv := newReceiver(t, 2)
	w := NewWebhook(rcv.URL, slog.New(slog.DiscardHandler))
	w.backoff = time.Millisecond
	done := make(chan struct{})
	go func() { defer close(done); w.Run(t.Context()) }()
	w.AlertsChanged(change(RuleRedisDown, "", false), nil)
	p := rcv.next(t)
	if p.Version != "4" || p.Status != "firing" || p.Alerts[0].Labels["alertname"] != RuleRedisDown ||
		p.Alerts[0].Annotations["summary"] != "m" || !p.Alerts[0].StartsAt.Equal(t0) || !p.Alerts[0].EndsAt.IsZero() {
		t.Fatalf("post = %+v", p)
	}
	if n := rcv.attempts.Load(); n != 3 {
		t.Errorf("attempts = %d, want 3", n)
	}
	counted(t, "the post counted as sent", &w.sent)
	if w.failed.Load() != 0 {
		t.Errorf("failed = %d", w.failed.Load())
	}
}

// A 4xx is the receiver's final word: one attempt, counted as failed.
func TestWebhookNoRetryOnRefusal(t *testing.T) {
	var attempts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		attempts.Add(1)
		http.Error(w, "no", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	w := NewWebhook(srv.URL, slog.New(slog.DiscardHandler))
	w.backoff = time.Millisecond
	go w.Run(t.Context())
	w.AlertsChanged(change(RuleNodeDown, "n", true), nil)
	counted(t, "the refusal counted", &w.failed)
	if n := attempts.Load(); n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}
}

// A receiver that never answers costs the evaluator nothing: enqueue
// returns at once, the queue stays bounded and the overflow is counted.
func TestWebhookSlowReceiverNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { once.Do(func() { close(release) }); srv.Close() })
	w := NewWebhook(srv.URL, slog.New(slog.DiscardHandler))
	go w.Run(t.Context())
	const posts = webhookQueue + 20
	for range posts { // would block forever if enqueue waited for the receiver
		w.AlertsChanged(change(RuleLimiterErrors, "l", false), nil)
	}
	// The worker holds at most one post; the queue holds webhookQueue.
	if d := w.dropped.Load(); d < posts-webhookQueue-1 || d > posts-webhookQueue {
		t.Errorf("dropped = %d of %d posts with a queue of %d", d, posts, webhookQueue)
	}
	if len(w.queue) > webhookQueue {
		t.Errorf("queue holds %d", len(w.queue))
	}
	once.Do(func() { close(release) })
}

func TestCheckWebhookURL(t *testing.T) {
	for _, bad := range []string{"ftp://x/y", "http://", "not a url", "/relative", "http://%zz"} {
		if CheckWebhookURL(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, good := range []string{"http://127.0.0.1:9093/hook", "https://alerts.example/api"} {
		if err := CheckWebhookURL(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

// counted waits for n to reach 1: the receiver has the post before the
// webhook has its reply and counts it.
func counted(t *testing.T, what string, n *atomic.Int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); n.Load() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
