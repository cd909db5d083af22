package luascripts

import (
	"regexp"
	"strings"
	"testing"
)

var (
	redisCall = regexp.MustCompile(`redis\.p?call\(`)
	bareNum   = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
)

// callArgs returns the top-level arguments of the call whose argument list
// starts at src[open:] (just after its "("), across lines. Quoted strings
// are skipped whole, so a parenthesis or comma in one ('(%d') counts for
// nothing; the scripts put no comments inside a call's arguments.
func callArgs(src string, open int) []string {
	depth, start := 0, open
	var args []string
	for i := open; i < len(src); i++ {
		switch src[i] {
		case '\'', '"':
			for q := src[i]; i+1 < len(src); {
				i++
				if src[i] == '\\' {
					i++
				} else if src[i] == q {
					break
				}
			}
		case '(', '{':
			depth++
		case ')', '}':
			if depth == 0 {
				return append(args, strings.TrimSpace(src[start:i]))
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(src[start:i]))
				start = i + 1
			}
		}
	}
	return args
}

// Redis 7.0 formats a Lua number passed to redis.call with %.17g, about
// 0.2 µs, a tenth of what the command itself costs inside a script, so a
// constant is written as the string it stands for.
func TestNoNumberLiteralReachesRedisCall(t *testing.T) {
	for _, name := range Names() {
		src := Source(name)
		for _, loc := range redisCall.FindAllStringIndex(src, -1) {
			for _, arg := range callArgs(src, loc[1]) {
				if bareNum.MatchString(arg) {
					line := strings.Count(src[:loc[0]], "\n") + 1
					t.Errorf("%s.lua:%d: redis.call gets the number %s; write '%s'", name, line, arg, arg)
				}
			}
		}
	}
}

// The check above finds what it is meant to.
func TestCallArgsFindsNumbers(t *testing.T) {
	src := "local x = redis.call('ZRANGE', KEYS[1], string.format('(%d', n), \"a)\\\"b\",\n  -1, 'WITHSCORES')[1]"
	loc := redisCall.FindStringIndex(src)
	got := callArgs(src, loc[1])
	want := []string{"'ZRANGE'", "KEYS[1]", "string.format('(%d', n)", `"a)\"b"`, "-1", "'WITHSCORES'"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("callArgs = %q, want %q", got, want)
	}
}
