package store

import (
	"testing"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

func TestNewRejectsNonUUIDClientID(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New with a non-UUID ID must panic: the console could never recognise its locks")
		}
	}()
	New(nil, &Options{ID: "app-1"})
}

func TestNewAcceptsUUIDClientID(t *testing.T) {
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	if got := New(nil, &Options{ID: id}).ID(); got != id {
		t.Fatalf("ID() = %q, want %q", got, id)
	}
	if got := New(nil, nil).ID(); !wire.IsHolderField(got + ":x") {
		t.Fatalf("default ID %q is not a canonical UUID", got)
	}
}
