// Package estimate turns the history of finished jobs into runtime
// distributions: for a queued job, what fraction of its time limit it will
// use; for a running job, how much longer it will run given its elapsed time
// and reported progress. Distributions are always capped at the time limit,
// where the resource manager kills the job. It also gives the release-time
// distribution of busy cards and the start-time distribution of a
// reservation that waits for several of them.
package estimate
