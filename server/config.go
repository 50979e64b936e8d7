package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/huitian/huitian/model"
)

// Config is the service's configuration. The zero value is not valid;
// start from Defaults.
type Config struct {
	// DataDir holds the store (huitian.db) and the what-if traces (traces/).
	DataDir string
	// DefaultPolicy plans requests that leave the policy unspecified.
	DefaultPolicy model.Policy
	// MaxRequestBytes caps one request message (after decompression).
	MaxRequestBytes int
	// MaxCards caps the cards of one Plan request's cluster.
	MaxCards int
	// MaxJobs caps one Plan request's running plus queued jobs.
	MaxJobs int
	// MaxDomains caps one request's cluster's interconnect domains.
	MaxDomains int
	// MaxEvents caps the events of one ReportEvents request.
	MaxEvents int
	// DefaultTimeBudget is the solver's budget when a request gives none.
	DefaultTimeBudget time.Duration
	// MaxTimeBudget is the largest budget a request may ask for; a larger
	// one is rejected.
	MaxTimeBudget time.Duration
	// TokenFile, when set, names the bearer tokens every call except health
	// must carry: one a line, each followed by the cluster ids it may use
	// (none or "*": all clusters). /metrics needs an all-clusters token.
	TokenFile string
	// MaxClusterLabels caps the clusters with series of their own in
	// /metrics; clusters beyond are counted, not labelled.
	MaxClusterLabels int
	// InsightCacheEntries bounds the hot insight cache.
	InsightCacheEntries int64
	// ShutdownTimeout bounds how long a stop waits for in-flight calls.
	ShutdownTimeout time.Duration
	// HeaderTimeout bounds reading a request's headers; BodyTimeout
	// reading its body (from the first byte of the call to the last of
	// the body, so a trickled or never-sent body ends the call; answers
	// may stream for longer); IdleTimeout how long a keep-alive
	// connection may sit idle.
	HeaderTimeout, BodyTimeout, IdleTimeout time.Duration
	// MaxConnections caps open connections: more wait to be accepted
	// (rather than exhausting the process's file descriptors).
	MaxConnections int
	// MaxStreams caps one HTTP/2 connection's concurrent streams.
	MaxStreams int
	// Retention says what the store keeps of each cluster's history, and
	// when it is compacted at start (retain.go).
	Retention Retention
}

// Defaults returns the documented defaults.
func Defaults() Config {
	return Config{
		DataDir:             "huitian-data",
		DefaultPolicy:       model.PolicyEASY,
		MaxRequestBytes:     64 << 20,
		MaxCards:            65536,
		MaxJobs:             100000,
		MaxDomains:          16384,
		MaxEvents:           10000,
		DefaultTimeBudget:   50 * time.Millisecond,
		MaxTimeBudget:       10 * time.Second,
		InsightCacheEntries: 100000,
		ShutdownTimeout:     30 * time.Second,
		HeaderTimeout:       10 * time.Second,
		BodyTimeout:         60 * time.Second,
		IdleTimeout:         2 * time.Minute,
		MaxConnections:      1024,
		MaxStreams:          100,
		MaxClusterLabels:    64,
		Retention:           DefaultRetention(),
	}
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.DataDir == "" {
		bad("data dir: must not be empty")
	}
	if c.DefaultPolicy == model.PolicyDefault || c.DefaultPolicy > model.PolicyHuitianGreedy {
		bad("default policy: must be a concrete policy, got %s", c.DefaultPolicy)
	}
	if c.MaxRequestBytes <= 0 {
		bad("max request bytes: must be positive, got %d", c.MaxRequestBytes)
	}
	if c.MaxCards <= 0 {
		bad("max cards: must be positive, got %d", c.MaxCards)
	}
	if c.MaxJobs <= 0 {
		bad("max jobs: must be positive, got %d", c.MaxJobs)
	}
	if c.MaxDomains <= 0 {
		bad("max domains: must be positive, got %d", c.MaxDomains)
	}
	if c.MaxEvents <= 0 {
		bad("max events: must be positive, got %d", c.MaxEvents)
	}
	if c.DefaultTimeBudget <= 0 {
		bad("default time budget: must be positive, got %s", c.DefaultTimeBudget)
	}
	if c.MaxTimeBudget < c.DefaultTimeBudget {
		bad("max time budget: %s is below the default time budget %s", c.MaxTimeBudget, c.DefaultTimeBudget)
	}
	if c.InsightCacheEntries <= 0 {
		bad("insight cache entries: must be positive, got %d", c.InsightCacheEntries)
	}
	if c.ShutdownTimeout < 0 {
		bad("shutdown timeout: must not be negative, got %s", c.ShutdownTimeout)
	}
	if c.HeaderTimeout <= 0 || c.BodyTimeout <= 0 || c.IdleTimeout <= 0 {
		bad("header, body and idle timeouts: must be positive, got %s, %s, %s", c.HeaderTimeout, c.BodyTimeout, c.IdleTimeout)
	}
	if err := c.Retention.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxConnections <= 0 {
		bad("max connections: must be positive, got %d", c.MaxConnections)
	}
	if c.MaxClusterLabels < 0 {
		bad("max cluster labels: must not be negative, got %d", c.MaxClusterLabels)
	}
	if c.MaxStreams <= 0 {
		bad("max streams: must be positive, got %d", c.MaxStreams)
	}
	return errors.Join(errs...)
}
