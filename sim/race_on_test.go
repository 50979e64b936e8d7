//go:build race

package sim

// raceDetector: the race detector is on (it slows a replay tenfold).
const raceDetector = true
