package luascripts

//go:generate go run ./internal/gen

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// files are the generated scripts, not src/ or lib/.
//
//go:embed *.lua
var files embed.FS

// Source returns the text of the named script ("lock_acquire" or
// "lock_acquire.lua"). It panics for an unknown name: script names are
// compile-time constants in this module, so a miss is a programming error.
func Source(name string) string {
	if !strings.HasSuffix(name, ".lua") {
		name += ".lua"
	}
	b, err := files.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("luascripts: no script %q", name))
	}
	return string(b)
}

// Names lists every embedded script without the .lua suffix, sorted.
func Names() []string {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".lua"))
	}
	sort.Strings(out)
	return out
}
