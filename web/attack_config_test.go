package web

import "time"

// Config for the attack tests.

// otherDeployment gives a console its own sign-in state, as a deployment
// over another Redis has.
func otherDeployment(c *Config) { c.AuthNamespace += "-elsewhere" }

// shortReadTimeout makes the whole-request read deadline short enough to
// test.
func shortReadTimeout(c *Config) { c.ReadTimeout = time.Second }
