package bench

import (
	"fmt"
	"strings"
	"context"
	"os"
	"testing"
	"time"
)

func TestZZExplore(t *testing.T) {
	what := os.Getenv("ZZ")
	if what == "" {
		t.Skip()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newEnv(t)
	switch what {
	case "5":
		for _, n := range []int{1000, 10000} {
			t0 := time.Now()
			a, b, c, err := samplerRounds(ctx, e, n, 1, 3*time.Second)
			t.Logf("%d (%v): %+v\n%+v\n%+v\n%v", n, time.Since(t0), a, b, c, err)
		}
	case "6":
		prefix, cleanup, err := fanoutObjects(ctx, e, 1000)
		defer cleanup()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 1000} {
			t0 := time.Now()
			r, err := fanout(ctx, e, prefix, n, 5*time.Second)
			t.Logf("%d (%v): %+v %v", n, time.Since(t0), r, err)
		}
	case "R":
		var md strings.Builder
		consoleReport(ctx, t, e, func(f string, a ...any) { fmt.Fprintf(&md, f, a...) }, func(w string, ok bool, got string) { fmt.Fprintf(&md, "TARGET %s %v %s\n", w, ok, got) })
		os.WriteFile("/tmp/h13_console.md", []byte(md.String()), 0o644)
	case "7":
		r, err := eventLatency(ctx, e, 1000, 5*time.Second)
		t.Logf("%+v %v", r, err)
	case "8":
		k := discoveryKeys{other: 1000000, locks: 10000, limiters: 1000}
		t0 := time.Now()
		rdb, err := discoveryServer(ctx, t, k)
		t.Logf("setup %v %v", time.Since(t0), err)
		for i := 0; i < 2; i++ {
			r, err := discoverOnce(ctx, rdb, k, time.Second)
			t.Logf("%+v %v", r, err)
		}
	}
}
