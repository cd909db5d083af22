package redisconn

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// Whatever a user passes as --redis, parsing it (no dial) never panics,
// fails only with ErrBadURL, names exactly one topology when it succeeds,
// and shows no password of the URL in an error or in Redact's output.
func FuzzParseURL(f *testing.F) {
	for _, seed := range []string{
		"redis://127.0.0.1:6379",
		"redis://u:hunter22@127.0.0.1:6379/2?dial_timeout=1s&client_name=x",
		"rediss://:pw%40x@host:6380",
		"redis://u:hunter22@127.0.0.1:6379?addr=127.0.0.1:6380&addr=127.0.0.1:6381",
		"redis://u:hunter22@127.0.0.1:6379/3?addr=127.0.0.1:6380",
		"redis://u:hunter22@127.0.0.1:notaport",
		"redis://u:hunter22@127.0.0.1:6379?bogus=1&password=hunter23",
		"redis+sentinel://u:hunter22@127.0.0.1:26379,127.0.0.2:26380/mymaster/1?sentinel_password=sp4ssword",
		"rediss+sentinel://app:p%40ss@10.0.0.1:26379/orders/4?dial_timeout=2s",
		"redis+sentinel://u:hunter22@127.0.0.1:26379/m?bogus=1&sentinel_password=hunter22",
		"redis+sentinel://@:/",
		"http://u:hunter22@127.0.0.1:6379",
		"127.0.0.1:6379",
		"redis://[::1]:6379",
		"redis://u:hunter22@%zz/",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		tg, err := parseTarget(raw, Options{ClientName: "fuzz"})
		if red := Redact(raw); leaks(red, raw, red) {
			t.Fatalf("Redact(%q) = %q shows a password", raw, red)
		}
		if err != nil {
			if !errors.Is(err, ErrBadURL) {
				t.Fatalf("%q: %v is not ErrBadURL", raw, err)
			}
			if leaks(err.Error(), raw, Redact(raw)) {
				t.Fatalf("%q: error shows a password: %v", raw, err)
			}
			return
		}
		n := 0
		for _, set := range []bool{tg.sentinel != nil, tg.cluster != nil, tg.single != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%q parsed into %d topologies", raw, n)
		}
	})
}

// leaks reports whether text shows a password of raw that is not also
// part of redacted (the URL without its passwords: a password that occurs
// there too is not told apart from the rest). Passwords shorter than four
// bytes occur by chance.
func leaks(text, raw, redacted string) bool {
	for _, pw := range secretsOf(raw) {
		if len(pw) >= 4 && strings.Contains(text, pw) && !strings.Contains(redacted, pw) {
			return true
		}
	}
	return false
}

// secretsOf finds the passwords of raw as net/url reads them, raw and
// decoded: the user part's and the password and sentinel_password query
// parameters.
func secretsOf(raw string) []string {
	var out []string
	_, rest, _ := strings.Cut(raw, "://")
	hostPart, query, _ := strings.Cut(rest, "?")
	hostPart, _, _ = strings.Cut(hostPart, "/")
	if at := strings.LastIndexByte(hostPart, '@'); at >= 0 {
		if _, pw, ok := strings.Cut(hostPart[:at], ":"); ok {
			out = append(out, pw)
			if d, err := url.PathUnescape(pw); err == nil {
				out = append(out, d)
			}
		}
	}
	if q, err := url.ParseQuery(query); err == nil {
		out = append(out, q["password"]...)
		out = append(out, q["sentinel_password"]...)
	}
	for _, kv := range strings.Split(query, "&") {
		if k, v, _ := strings.Cut(kv, "="); k == "password" || k == "sentinel_password" {
			out = append(out, v)
		}
	}
	return out
}
