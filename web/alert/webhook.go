package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
)

// Webhook bounds: a receiver that is slow or down costs a bounded queue
// and one goroutine, never the sampler's time.
const (
	webhookQueue    = 64
	webhookTimeout  = 5 * time.Second
	webhookAttempts = 3
	webhookBackoff  = time.Second // doubled after every failed attempt
)

// CheckWebhookURL says what is wrong with an --alert-webhook value.
func CheckWebhookURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("alert webhook %q is not a URL: %v", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("alert webhook %q must be an http:// or https:// URL with a host", raw)
	}
	return nil
}

// Webhook posts alert changes to one receiver from its own goroutine.
type Webhook struct {
	url     string
	client  *http.Client
	queue   chan []byte
	log     *slog.Logger
	backoff time.Duration

	sent, failed, dropped atomic.Int64
}

// Counts are the posts the receiver accepted, those given up after
// retries or refused, and those dropped at a full queue.
func (w *Webhook) Counts() (sent, failed, dropped int64) {
	if w == nil {
		return 0, 0, 0
	}
	return w.sent.Load(), w.failed.Load(), w.dropped.Load()
}

// NewWebhook posts to rawURL (checked by CheckWebhookURL) once Run runs.
func NewWebhook(rawURL string, log *slog.Logger) *Webhook {
	return &Webhook{
		url:     rawURL,
		client:  &http.Client{Timeout: webhookTimeout},
		queue:   make(chan []byte, webhookQueue),
		log:     log,
		backoff: webhookBackoff,
	}
}

// AlertsChanged queues one post of changes without waiting: when the
// queue is full the post is dropped and counted.
func (w *Webhook) AlertsChanged(changes []Change, _ []Alert) {
	body, err := json.Marshal(webhookPayload(changes))
	if err != nil {
		w.log.Error("encoding alert webhook", "err", err)
		return
	}
	select {
	case w.queue <- body:
	default:
		w.dropped.Add(1)
		w.log.Warn("alert webhook queue full: notification dropped", "alerts", len(changes))
	}
}

// Run posts queued notifications until ctx ends.
func (w *Webhook) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case body := <-w.queue:
			if err := w.post(ctx, body); err != nil {
				w.failed.Add(1)
				if ctx.Err() == nil {
					w.log.Warn("alert webhook failed", "err", err)
				}
				continue
			}
			w.sent.Add(1)
		}
	}
}

// errPermanent marks a refusal that retrying would only repeat.
var errPermanent = errors.New("alert: webhook receiver refused the notification")

// post sends body, retrying network errors, 429 and 5xx with backoff.
func (w *Webhook) post(ctx context.Context, body []byte) error {
	var err error
	wait := w.backoff
	for attempt := 1; ; attempt++ {
		err = w.postOnce(ctx, body)
		if err == nil || errors.Is(err, errPermanent) || attempt == webhookAttempts {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait *= 2
	}
}

func (w *Webhook) postOnce(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "lockwarden")
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("webhook answered %s", resp.Status)
	default:
		return fmt.Errorf("%w: %s", errPermanent, resp.Status)
	}
}

// Payload is the body Alertmanager sends to webhook receivers (version
// 4), so receivers written for Alertmanager take lockwarden's as they are.
type Payload struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []PayloadAlert    `json:"alerts"`
}

type PayloadAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// webhookPayload is one post of changes: "firing" while any of them fires.
func webhookPayload(changes []Change) Payload {
	p := Payload{Version: "4", GroupKey: "{}:{}", Status: "resolved", Receiver: "lockwarden",
		GroupLabels: map[string]string{}, CommonLabels: map[string]string{}, CommonAnnotations: map[string]string{}}
	for _, c := range changes {
		a := PayloadAlert{
			Status: "firing",
			Labels: map[string]string{"alertname": c.Rule, "rule": c.Rule, "name": c.Name,
				"severity": c.Severity, "source": "lockwarden"},
			Annotations: map[string]string{"summary": c.Message},
			StartsAt:    c.Since.UTC(),
		}
		if c.Resolved {
			a.Status, a.EndsAt = "resolved", c.At.UTC()
		} else {
			p.Status = "firing"
		}
		a.Fingerprint = alertFingerprint(c.Rule, c.Name)
		p.Alerts = append(p.Alerts, a)
	}
	return p
}

// alertFingerprint identifies one alert across its fire and resolve posts.
func alertFingerprint(rule, name string) string {
	h := fnv.New64a()
	h.Write([]byte(rule))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return fmt.Sprintf("%016x", h.Sum64())
}
