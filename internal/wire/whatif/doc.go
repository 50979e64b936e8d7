// Package whatif maps the simulator's what-if runs (sim) to the API's
// WhatIf messages (proto/huitian/v1), and a request's cluster shape to a
// cluster (model/shape), once, at the edge: the service's
// WhatIf answers with it, and `huitian whatif --json` prints the same
// numbers from sim directly.
//
// It is a package of its own under internal/wire because sim reads cluster
// files through internal/wire: the mapping depends on sim, so it cannot
// live in internal/wire itself without an import cycle.
package whatif
