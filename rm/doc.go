// Package rm is the resource-manager loop: every cycle it takes a snapshot
// of the cluster from a Driver, asks a planning service for a plan over the
// real RPC client, has the driver carry out the plan's preemptions and then
// its starts, and reports what happened with ReportEvents, retried until the
// service acknowledges it. The demo, the Kubernetes driver (rm/kube) and any
// later driver share this one loop; a driver only knows its cluster.
package rm
