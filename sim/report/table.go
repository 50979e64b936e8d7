package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/huitian/huitian/sim"
)

// A table is what both report.md and the console (WriteTables) show: the
// same columns and the same cells, durations in the units Duration picks
// (s, min, h, d).
type table struct {
	columns []string
	// left is how many leading columns hold names (left-aligned in
	// Markdown); the rest hold figures.
	left int
	rows [][]string
}

// comparisonTable is one row per run: waits, slowdown, utilization,
// backfill and preemptions.
func comparisonTable(runs []Run) table {
	t := table{left: 1, columns: []string{"policy", "jobs", "avg wait", "median wait", "p95 wait", "avg flow", "avg bsld",
		"utilization", "util. while queued", "makespan", "backfill starts", "backfill completion", "main-wait Δ", "preemptions"}}
	for _, r := range runs {
		s := r.Result.Summary
		jobs := fmt.Sprint(s.Jobs)
		if s.NeverStarted > 0 {
			jobs += fmt.Sprintf(" (+%d never started)", s.NeverStarted)
		}
		t.rows = append(t.rows, []string{r.Label, jobs, Duration(s.AvgWait), Duration(s.MedianWait), Duration(s.P95Wait),
			Duration(s.AvgFlow), fmt.Sprintf("%.2f", s.AvgBSLD), fmt.Sprintf("%.1f%%", 100*s.Utilization), percent(s.UtilizationQueued),
			Duration(float64(s.Makespan)), fmt.Sprint(s.BackfillStarts), percent(s.BackfillCompletionRate),
			signedDuration(r.MainWaitDelta), fmt.Sprint(s.Preemptions)})
	}
	return t
}

// classesTable is one row per size class and run, with the ratios to the
// reference run on the same jobs.
func classesTable(runs []Run) table {
	t := table{left: 2, columns: []string{"class", "policy", "jobs", "mean wait", "p95 wait", "mean bsld", "preemptions",
		"same jobs", "mean wait ×ref", "p95 wait ×ref", "bsld ×ref"}}
	ratio := func(p *float64) string {
		if p == nil {
			return "–"
		}
		return fmt.Sprintf("%.3f", *p)
	}
	for c := range sim.NumClasses {
		for _, r := range runs {
			cl := r.Result.Summary.Classes
			if c >= len(cl) || (cl[c].Jobs == 0 && cl[c].Preemptions == 0) {
				continue
			}
			k := cl[c]
			same, mw, pw, bs := "–", "–", "–", "–"
			if c < len(r.SameJobs) {
				v := r.SameJobs[c]
				same, mw, pw, bs = fmt.Sprint(v.Jobs), ratio(v.MeanWaitRatio), ratio(v.P95WaitRatio), ratio(v.BSLDRatio)
			}
			t.rows = append(t.rows, []string{k.Class, r.Label, fmt.Sprint(k.Jobs), Duration(k.MeanWait), Duration(k.P95Wait),
				fmt.Sprintf("%.2f", k.MeanBSLD), fmt.Sprint(k.Preemptions), same, mw, pw, bs})
		}
	}
	return t
}

// headsTable is one row per run: head delay and lost work.
func headsTable(runs []Run) table {
	t := table{left: 1, columns: []string{"policy", "heads", "mean delay", "p95 delay", "max delay", "held by lent", "held max", "lost card-time", "lost / busy"}}
	for _, r := range runs {
		s := r.Result.Summary
		h := s.HeadDelay
		t.rows = append(t.rows, []string{r.Label, fmt.Sprint(h.Jobs), Duration(h.Mean), Duration(h.P95), Duration(h.Max),
			fmt.Sprint(h.Held), Duration(h.HeldMax), cardTime(s.LostCardSeconds), percent(s.LostShare)})
	}
	return t
}

// markdown writes the table as a Markdown table.
func (t table) markdown(b *bytes.Buffer) {
	b.WriteString("| " + strings.Join(t.columns, " | ") + " |\n|")
	for i := range t.columns {
		if i < t.left {
			b.WriteString("---|")
		} else {
			b.WriteString("--:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
}

// text writes the table aligned (right) for a terminal.
func (t table) text(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells []string) {
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	line(t.columns)
	for _, r := range t.rows {
		line(r)
	}
	return tw.Flush()
}

// WriteTables prints the tables of report.md (the comparison, the waits
// by job size, head delay and lost work), with the same columns and
// units, for a terminal. reference names the run the ratios and main-wait
// Δ compare with.
func WriteTables(w io.Writer, reference string, runs []Run) error {
	if err := comparisonTable(runs).text(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nmain-wait Δ: mean wait of the jobs each policy started as regular minus %s's (different jobs per policy).\n", reference)
	fmt.Fprintf(w, "\nby job size (cards); ×ref: this policy over %s on the same jobs (those that finished in both)\n", reference)
	if err := classesTable(runs).text(w); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nhead delay: start minus the start promised by the first reservation, for every job that was the reserved head;")
	fmt.Fprintln(w, "held by lent: heads that waited with their cards free but for jobs lent into windows (beyond EASY), and the longest such wait")
	return headsTable(runs).text(w)
}
