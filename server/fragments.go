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

// cardStatus lists every card of the cluster in its order, each with the
// class it was idle in (from the decision's Idle labels).
func cardStatus(cl *model.Cluster, idle []model.IdleCard) []*pb.CardStatus {
	class := make(map[model.CardRef]model.FragmentClass, len(idle))
	for _, ic := range idle {
		class[ic.Card] = ic.Class
	}
	var out []*pb.CardStatus
	for _, n := range cl.Nodes {
		for _, c := range n.Cards {
			ref := model.CardRef{Node: n.Name, Index: c.Index}
			out = append(out, &pb.CardStatus{
				Card:   &pb.CardRef{Node: n.Name, Index: int32(c.Index)},
				Usable: !c.Unhealthy && !n.Unschedulable,
				Idle:   pb.FragmentClass(class[ref]),
			})
		}
	}
	return out
}
