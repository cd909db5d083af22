package views

import "testing"

func TestHolderWhoText(t *testing.T) {
	h := HolderRow{ID: "u:77", Count: 1, Who: "orders-api on host-7 (pid 4211), owner 77", HeldMS: 192_400, RenewedAgoMS: 4_200}
	if got, want := holderWhoText(h), "orders-api on host-7 (pid 4211), owner 77, held 3 min 12 s, renewed 4.2 s ago"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	seen := HolderRow{ID: "u:44", Count: 2, Who: "unregistered client u (Redisson or other), owner 44", HeldMS: 5000, HeldSinceSeen: true}
	if got, want := holderWhoText(seen), "unregistered client u (Redisson or other), owner 44, held 5 s (since the console first saw it)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := holdersWhoText([]HolderRow{{ID: "token", Count: 1}}); got != "" {
		t.Fatalf("a holder nobody knows got %q", got)
	}
}
