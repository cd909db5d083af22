package wire

// Layouts of a Redisson sliding-window grant, the members of
// "{<name>}:permits[:<client-id>]", as struct.pack formats.
const (
	RedissonPermitFI   = "fI"   // 3.13.3 to 3.16.3: float32 random, uint32 permits (8 bytes)
	RedissonPermitLc0I = "Lc0I" // 3.16.4: uint64 id length, id, uint32 permits
	RedissonPermitBc0I = "Bc0I" // 3.17.0 and later: uint8 id length, id, uint32 permits
)
