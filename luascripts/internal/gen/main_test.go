package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed scripts are what the sources generate, and every script
// the package embeds has a source.
func TestGeneratedScriptsAreCurrent(t *testing.T) {
	want, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	have, err := filepath.Glob("../../*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range have {
		name := filepath.Base(path)
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("luascripts/%s has no source in luascripts/src", name)
		case string(text) != w:
			t.Errorf("luascripts/%s is stale: run go generate ./luascripts", name)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("luascripts/%s is missing: run go generate ./luascripts", name)
	}
}

func TestIncludesExpandOnceInOrder(t *testing.T) {
	dir := t.TempDir()
	put := func(rel, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("lib/a.lua", "local function a() end\n")
	put("lib/b.lua", "--#include lib/a.lua\nlocal function b() a() end\n")
	put("src/s.lua", "-- s: a script.\n--#include lib/b.lua\n--#include lib/a.lua\nb()\n")
	put("old.lua", header("old.lua")+"return 1\n")
	put("kept.lua", "return 2\n")
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "s.lua"))
	want := header("s.lua") + "-- s: a script.\nlocal function a() end\nlocal function b() a() end\nb()\n"
	if string(got) != want {
		t.Fatalf("s.lua =\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "old.lua")); !os.IsNotExist(err) {
		t.Errorf("a generated script without a source is left behind (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kept.lua")); err != nil {
		t.Errorf("a file gen did not write was removed: %v", err)
	}
}

func TestIncludeErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"--#include lib/missing.lua\n", "missing.lua"},
		{"--#include ../x.lua\n", "lib/<helper>.lua"},
		{"--#incldue lib/a.lua\n", "lib/<helper>.lua"},
		{"return 1", "newline"},
	} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "src", "s.lua"), []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := generate(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want one naming %q", tc.src, err, tc.want)
		}
	}
}
