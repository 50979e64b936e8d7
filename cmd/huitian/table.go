package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// writeTable prints a decision for people: starts, reservations, and why
// every other job waits.
func writeTable(w io.Writer, s *model.Snapshot, r *pb.PlanResponse) error {
	now := s.Now
	at := func(t time.Time) string {
		return fmt.Sprintf("%s (in %s)", t.UTC().Format("15:04:05"), t.Sub(now).Round(time.Second))
	}
	free := 0
	for _, n := range s.Cluster.Nodes {
		free += len(n.Cards)
	}
	for _, rj := range s.Running {
		free -= len(rj.Cards)
	}
	fmt.Fprintf(w, "cluster %s at %s: %d nodes, %d running jobs, %d queued, %d cards free; policy %s\n\n",
		s.Cluster.ID, now.UTC().Format(time.RFC3339), len(s.Cluster.Nodes), len(s.Running), len(s.Queued), free, r.GetStats().GetSolver())
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "START\tKIND\tCARDS\tKEEPS CARDS\tFRAGMENT\tWHY")
	for _, st := range r.GetStarts() {
		keep := "until done"
		if st.GetExpectedRetention() != nil {
			keep = st.GetExpectedRetention().AsDuration().String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", st.GetJobId(), kindName(st.GetKind()), cardList(st.GetCards()),
			keep, strings.ToLower(strings.TrimPrefix(st.GetFragment().String(), "FRAGMENT_CLASS_")), st.GetReason())
	}
	if len(r.GetStarts()) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "RESERVATION\tFROM\tCARDS\tCONFIDENCE")
	for _, rs := range r.GetReservations() {
		cards := cardList(rs.GetCards())
		if len(rs.GetCards()) == 0 { // a flat cluster's: a count
			cards = fmt.Sprintf("any %d", rs.GetCount())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\n", rs.GetJobId(), at(rs.GetStartTime().AsTime()), cards, rs.GetConfidence())
	}
	if len(r.GetReservations()) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "WAITING\tREASON\tESTIMATED START\tWHY")
	for _, p := range r.GetPending() {
		est := "-"
		if p.GetEstimatedStart() != nil {
			est = at(p.GetEstimatedStart().AsTime())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.GetJobId(), strings.ToLower(strings.TrimPrefix(p.GetReason().String(), "PENDING_REASON_")), est, p.GetMessage())
	}
	if len(r.GetPending()) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	for _, pr := range r.GetPreemptions() {
		fmt.Fprintf(tw, "\nPREEMPT %s\t%s\tnotice %s\tfor %s: %s\n", pr.GetJobId(), pr.GetAction(), pr.GetNotice().AsDuration(), pr.GetForJobId(), pr.GetReason())
	}
	return tw.Flush()
}

func kindName(k pb.AllocationKind) string {
	if k == pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
		return "backfill"
	}
	return "regular"
}

// cardList writes cards compactly: gpu-b/4-7, gpu-c/0.
func cardList(cs []*pb.CardRef) string {
	var parts []string
	for i := 0; i < len(cs); {
		j := i
		for j+1 < len(cs) && cs[j+1].GetNode() == cs[i].GetNode() && cs[j+1].GetIndex() == cs[j].GetIndex()+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprintf("%s/%d", cs[i].GetNode(), cs[i].GetIndex()))
		} else {
			parts = append(parts, fmt.Sprintf("%s/%d-%d", cs[i].GetNode(), cs[i].GetIndex(), cs[j].GetIndex()))
		}
		i = j + 1
	}
	return strings.Join(parts, " ")
}
