// Package web is the page that `huitian serve` shows at / on its own port:
// the cluster's cards, the queue, every job's backfill contract and the
// backfill measures, read by the browser from the service's Connect JSON
// API. The assets are embedded; nothing is fetched from elsewhere.
package web
