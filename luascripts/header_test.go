package luascripts

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// scriptHeader splits a script into its header, the comment lines at its
// top without their "-- " (an entry's continuation lines keep their
// indent; the generator's own first line is left out), and the rest.
func scriptHeader(src string) (header []string, body string) {
	lines := strings.SplitAfter(src, "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "-- Code generated ") {
		lines = lines[1:]
	}
	i := 0
	for ; i < len(lines) && strings.HasPrefix(lines[i], "--") && !strings.HasPrefix(lines[i], "--#"); i++ {
		line := strings.TrimRight(strings.TrimPrefix(lines[i], "--"), " \n")
		header = append(header, strings.TrimPrefix(line, " "))
	}
	return header, strings.Join(lines[i:], "")
}

var (
	contractEntry = regexp.MustCompile(`^(KEYS|ARGV)\[(\d+)([^\]]*\.\.[^\]]*)?\]\s*->`)
	contractNone  = regexp.MustCompile(`^(KEYS|ARGV): none\b`)
	slotUse       = regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\]`)
)

// Every script's header is one line (or two) of intent, then its contract:
// an entry for each KEYS[n] and ARGV[n] the code reads (a range "[n..]"
// covers n and above; "KEYS: none" and "ARGV: none" say there are none),
// then what it returns, last. Design notes live in the package doc.
func TestHeadersStateTheContract(t *testing.T) {
	for _, name := range Names() {
		header, body := scriptHeader(Source(name))
		if len(header) == 0 || !strings.HasPrefix(header[0], name+": ") {
			t.Errorf("%s.lua: the header starts %q, want %q and its intent", name, first(header), name+": ")
			continue
		}
		intent := 1
		for intent < len(header) && header[intent] != "" {
			intent++
		}
		if intent > 2 {
			t.Errorf("%s.lua: the intent takes %d lines, want at most 2 (design notes go to the package doc)", name, intent)
		}
		documented := map[string]int{} // "KEYS" -> first n a range starts at
		exact := map[string]bool{}     // "KEYS[3]"
		none := map[string]bool{}
		returns := -1
		for i := intent; i < len(header); i++ {
			line := header[i]
			switch m := contractEntry.FindStringSubmatch(line); {
			case m != nil:
				n, _ := strconv.Atoi(m[2])
				if m[3] != "" {
					if cur, ok := documented[m[1]]; !ok || n < cur {
						documented[m[1]] = n
					}
				} else {
					exact[m[1]+"["+m[2]+"]"] = true
				}
			case contractNone.MatchString(line):
				none[strings.SplitN(line, ":", 2)[0]] = true
			case strings.HasPrefix(line, "Returns"):
				if returns < 0 {
					returns = i
				}
			case line == "" && returns >= 0:
				t.Errorf("%s.lua: the header goes on after its Returns paragraph (%q...): design notes go to the package doc", name, first(header[i+1:]))
				i = len(header)
			case returns < 0 && line != "" && !strings.HasPrefix(line, "(") && !strings.HasPrefix(line, " "):
				t.Errorf("%s.lua: %q is neither a KEYS / ARGV entry nor Returns", name, line)
			}
		}
		if returns < 0 {
			t.Errorf("%s.lua: the header says nothing of what it returns (a line starting Returns)", name)
		}
		for _, kind := range []string{"KEYS", "ARGV"} {
			_, ranged := documented[kind]
			has := none[kind] || ranged
			for k := range exact {
				has = has || strings.HasPrefix(k, kind+"[")
			}
			if !has {
				t.Errorf("%s.lua: the header has no %s entry (write \"%s: none\" when there is none)", name, kind, kind)
			}
		}
		for _, m := range slotUse.FindAllStringSubmatch(code(body), -1) {
			n, _ := strconv.Atoi(m[2])
			from, ranged := documented[m[1]]
			if !exact[m[0]] && !(ranged && n >= from) {
				t.Errorf("%s.lua: the code reads %s, which the header does not describe", name, m[0])
			}
		}
	}
}

func first(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

// code is src without its comments (a "--" outside a quoted string starts
// one; the scripts have no long comments or long strings).
func code(src string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(src, "\n") {
		if i := commentStart(line); i >= 0 {
			b.WriteString(line[:i])
			b.WriteString("\n")
		} else {
			b.WriteString(line)
		}
	}
	return b.String()
}

// comments is the text of src's comments, one line each.
func comments(src string) []string {
	var out []string
	for _, line := range strings.Split(src, "\n") {
		if i := commentStart(line); i >= 0 {
			out = append(out, line[i+2:])
		}
	}
	return out
}

func commentStart(line string) int {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '\'' || c == '"':
			quote = c
		case c == '-' && i+1 < len(line) && line[i+1] == '-':
			return i
		}
	}
	return -1
}

// goPackages are the Go packages a script's comments may name, by the name
// they are written with, and their directories.
var goPackages = map[string]string{
	"store":   "../store",
	"wire":    "../store/internal/wire",
	"inspect": "../store/inspect",
}

var (
	goRef   = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)(\.[A-Z][A-Za-z0-9_]*)?`)
	fileRef = regexp.MustCompile(`[A-Za-z0-9_][A-Za-z0-9_./-]*\.(go|lua)\b`)
)

// Every Go identifier and every file a script's comments name exists, so
// a reader can open it.
func TestCommentsNameWhatExists(t *testing.T) {
	decls := map[string]map[string]bool{}
	for pkg, dir := range goPackages {
		decls[pkg] = declaredNames(t, dir)
	}
	for _, name := range Names() {
		for _, c := range comments(Source(name)) {
			for _, m := range goRef.FindAllStringSubmatch(c, -1) {
				names, ok := decls[m[1]]
				switch {
				case !ok:
					t.Errorf("%s.lua names %s: no Go package %q is known to this test (add it to goPackages)", name, m[0], m[1])
				case !names[m[2]+m[3]]:
					t.Errorf("%s.lua names %s, which package %s (%s) does not declare", name, m[0], m[1], goPackages[m[1]])
				}
			}
			for _, f := range fileRef.FindAllString(c, -1) {
				if !fileExists(f) {
					t.Errorf("%s.lua names %s, which does not exist", name, f)
				}
			}
		}
	}
}

// fileExists finds a path as the scripts write them: from the repository
// root (store/lock_wait.go), or from this directory (lock_acquire.lua,
// lib/record.lua).
func fileExists(path string) bool {
	for _, p := range []string{filepath.Join("..", path), path} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// declaredNames lists the top-level names of the Go package in dir (tests
// left out), and its methods as "Type.Method".
func declaredNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Go files in %s (%v)", dir, err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					out[d.Name.Name] = true
					continue
				}
				typ := d.Recv.List[0].Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					out[id.Name+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						out[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							out[n.Name] = true
						}
					}
				}
			}
		}
	}
	return out
}

// The checks above catch what they are meant to.
func TestContractChecksFindFaults(t *testing.T) {
	h, body := scriptHeader("-- Code generated x\n-- s: does a thing.\n--\n-- KEYS[1] -> k\n-- ARGV[2..] -> v\n-- Returns 1.\nlocal a = KEYS[2] -- KEYS[9]\nlocal s = '--' .. ARGV[3]\n")
	if len(h) != 5 || h[0] != "s: does a thing." {
		t.Fatalf("header = %q", h)
	}
	if got := slotUse.FindAllString(code(body), -1); strings.Join(got, " ") != "KEYS[2] ARGV[3]" {
		t.Fatalf("slots read = %q, want KEYS[2] ARGV[3]", got)
	}
	if got := comments(body); len(got) != 1 || got[0] != " KEYS[9]" {
		t.Fatalf("comments = %q", got)
	}
	if m := goRef.FindAllString("see wire.HeldKey and store.Lock.Unlock, not redis.call", -1); strings.Join(m, " ") != "wire.HeldKey store.Lock.Unlock" {
		t.Fatalf("Go names = %q", m)
	}
	names := declaredNames(t, "../store/internal/wire")
	if !names["HeldKey"] || names["StatsKeyOf"] {
		t.Fatal("declaredNames misses or invents wire's names")
	}
}
