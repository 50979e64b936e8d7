package server

import (
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// fragments is the decision's idle-capacity inventory (empty for planners
// that do not classify fragments).
func fragments(d *model.Decision) []*pb.FragmentSummary {
	out := make([]*pb.FragmentSummary, 0, len(d.Fragments))
	for _, f := range d.Fragments {
		out = append(out, &pb.FragmentSummary{
			Fragment: pb.FragmentClass(f.Class), Cards: int32(f.Cards), Nodes: int32(f.Nodes), CardSeconds: f.CardSeconds,
		})
	}
	return out
}
