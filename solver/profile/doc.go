// Package profile is the space-time availability of a cluster's cards:
// which card is busy when, in integer seconds from the snapshot's now. It
// answers "where and when can this job start" (EarliestStart, FitNow),
// records reservations and starts, and gives each free card its window until
// the next reservation. Placement honours the job's topology by best fit.
package profile
