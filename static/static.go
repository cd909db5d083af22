// Package static holds the console's stylesheet and websocket client,
// embedded so the binary serves them without files on disk.
package static

import "embed"

// FS holds app.css and app.js at its root; web mounts it under /static/.
//
//go:embed app.css app.js
var FS embed.FS
