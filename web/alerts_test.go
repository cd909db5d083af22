package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/alert"
)

// The live console: a lock without expiry shows in /api/alerts and
// /metrics, and the webhook hears it fire and resolve.
func TestAlertAPIMetricsAndWebhook(t *testing.T) {
	posts := make(chan alert.Payload, 16)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p alert.Payload
		if json.NewDecoder(r.Body).Decode(&p) == nil {
			posts <- p
		}
	}))
	t.Cleanup(rcv.Close)
	next := func() alert.Payload {
		t.Helper()
		select {
		case p := <-posts:
			return p
		case <-time.After(10 * time.Second):
			t.Fatal("no webhook post arrived")
			return alert.Payload{}
		}
	}
	e := newEnv(t, func(c *Config) {
		fastTicks(c)
		c.Alerts = AlertConfig{For: map[string]time.Duration{RuleLockNoExpiry: 0}, Webhook: rcv.URL}
		if err := c.Inspector.SetObjectPatterns(inspect.ObjectPatterns{TokenLocks: []string{c.Match}}); err != nil {
			t.Fatal(err)
		}
	})
	name := e.prefix + "stuck"
	// A hand-written SETNX lock whose holder died before its EXPIRE.
	if err := e.rdb.SetNX(t.Context(), name, "holder-token", 0).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rdb.Del(context.Background(), name) })
	var got alertsJSON
	eventually(t, 5*time.Second, "the alert in /api/alerts", func() bool {
		_, _, b := e.do("GET", "/api/alerts", nil, nil)
		got = alertsJSON{}
		return json.Unmarshal(b, &got) == nil && len(got.Alerts) == 1
	})
	al := got.Alerts[0]
	if al.Rule != RuleLockNoExpiry || al.Name != name || al.Severity != "warning" || al.Since.IsZero() || al.Message == "" {
		t.Fatalf("alert = %+v", al)
	}
	_, _, b := e.do("GET", "/metrics", nil, nil)
	want := `lockwarden_alert_firing{name="` + name + `",rule="lock-no-expiry"} 1`
	if !strings.Contains(string(b), want) {
		t.Errorf("/metrics lacks %s", want)
	}
	if _, _, page := e.do("GET", "/", nil, nil); !strings.Contains(string(page), `data-rule="lock-no-expiry"`) {
		t.Error("the overview does not show the alert")
	}
	p := next()
	if p.Status != "firing" || len(p.Alerts) != 1 || p.Alerts[0].Labels["alertname"] != RuleLockNoExpiry ||
		p.Alerts[0].Labels["name"] != name || !p.Alerts[0].StartsAt.Equal(al.Since) {
		t.Fatalf("fire post = %+v", p)
	}
	if err := e.rdb.Del(t.Context(), name).Err(); err != nil {
		t.Fatal(err)
	}
	p = next()
	if p.Status != "resolved" || len(p.Alerts) != 1 || p.Alerts[0].Status != "resolved" ||
		p.Alerts[0].Fingerprint == "" || p.Alerts[0].EndsAt.IsZero() {
		t.Fatalf("resolve post = %+v", p)
	}
	_, _, b = e.do("GET", "/api/alerts", nil, nil)
	if strings.TrimSpace(string(b)) != `{"alerts":[]}` {
		t.Errorf("/api/alerts after resolve: %s", b)
	}
}
