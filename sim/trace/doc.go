// Package trace reads workload traces (SWF, Philly, Alibaba openb, Helios/Acme-style
// CSV) and generates synthetic GPU workloads, turning each into a submit-ordered slice
// of jobs plus a count, by reason, of every record it dropped.
//
// Every reader takes an io.Reader (gzip is detected by its magic bytes, not by a file
// name) and Options; Open dispatches on a format name. Times are integer seconds from
// the trace's own epoch. Where a trace has no user runtime estimate, Limit is set by
// Options.Estimate (see LimitFor) and the Trace's Notes say so.
package trace
