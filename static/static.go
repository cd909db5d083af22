// Package static holds the console's stylesheet and websocket client,
// embedded so the binary serves them without files on disk.
package static

import "embed"

// FS holds the stylesheet, the favicon and the live client's parts at its
// root, and the libraries they use under vendor/ (installed from npm by
// `make deps`, checked against their committed SHA256SUMS); web mounts it
// under /static/.
//
//go:embed app.css favicon.svg *.js vendor/uplot
var FS embed.FS

// Scripts are the live client's parts in the order a page must load them:
// core defines the shared helpers, the page parts register their frame
// handlers, live opens the websocket last.
var Scripts = []string{"core.js", "limiters.js", "locks.js", "waiters.js", "waits.js", "events.js", "lists.js", "charts.js", "chartlimiters.js", "chartlocks.js", "live.js"}

// Vendor are the libraries a page loads before Scripts, and their
// stylesheets before app.css (which overrides them).
var (
	VendorScripts = []string{"vendor/uplot/uPlot.iife.min.js"}
	VendorStyles  = []string{"vendor/uplot/uPlot.min.css"}
)
