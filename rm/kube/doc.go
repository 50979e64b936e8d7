// Package kube is the Kubernetes driver of the resource-manager loop: it
// reads the cluster's GPU cards from DRA ResourceSlices, the queue from
// suspended batch/v1 Jobs carrying the queue label, starts planned jobs
// card-exact through scheduler-allocated DRA claims pinned by a CEL
// selector on the planned cards' UUIDs, preempts by suspending Jobs, and
// tells users what huitian decided through Events and annotations on each
// Job. Everything it must remember lives on the Jobs, so a restart of the
// adapter or of the API server loses nothing.
package kube
