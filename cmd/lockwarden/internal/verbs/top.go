package verbs

import (
	"context"
	"flag"

	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/consoleclient"
	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/top"
)

func topFlags(fs *flag.FlagSet, o *opts) {
	fs.BoolVar(&o.admin, "admin", false, "allow changes: 'u' force-unlocks the selected lock after a reason and a confirmation (the token must be the admin's)")
}

func runTop(ctx context.Context, c *consoleclient.Client, o *opts, io IO) error {
	return top.Run(ctx, c, top.Options{Admin: o.admin, Input: io.Stdin, Output: io.Stdout})
}
