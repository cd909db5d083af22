package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
)

// Keyring holds the console's signing secret: 32 random bytes created by
// the first replica that needs them and stored in Redis (Keys.Secret), so
// every replica signs alike and nothing is derived from the tokens. A
// viewer who knows its own token therefore learns nothing about the admin
// token from a cookie or a fingerprint: checking a guess needs the secret.
type Keyring struct {
	secret []byte
}

var secretScript = store.NewScript(luascripts.Source("auth_secret"))

// ErrBadSecret: the stored secret is not one this console wrote.
var ErrBadSecret = errors.New("auth: stored signing secret is malformed")

// secretLen is the secret's length in bytes.
const secretLen = 32

// LoadKeyring reads the signing secret from Redis, storing a fresh random
// one first when there is none (SET NX, so replicas starting together
// still agree on one).
func LoadKeyring(ctx context.Context, rdb redis.UniversalClient, keys Keys) (*Keyring, error) {
	fresh := make([]byte, secretLen)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("auth: random secret: %w", err)
	}
	v, err := secretScript.Run(ctx, rdb, []string{keys.Secret()}, hex.EncodeToString(fresh)).Text()
	if err != nil {
		return nil, fmt.Errorf("auth: loading the signing secret: %w", err)
	}
	secret, err := hex.DecodeString(v)
	if err != nil || len(secret) != secretLen {
		return nil, fmt.Errorf("%w (key %s)", ErrBadSecret, keys.Secret())
	}
	return &Keyring{secret: secret}, nil
}

// mac is HMAC-SHA256 under the secret of purpose and msg; purposes keep a
// fingerprint from ever equalling a session signature.
func (k *Keyring) mac(purpose, msg string) []byte {
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// Fingerprint names a token in the audit trail, logs and sessions without
// revealing it: 16 hex digits of an HMAC under the stored secret, so it
// cannot be used to test guesses offline and differs between deployments.
func (k *Keyring) Fingerprint(token string) string {
	return hex.EncodeToString(k.mac("token", token)[:8])
}
