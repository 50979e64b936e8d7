package huitianv1_test

import (
	"cmp"
	"errors"
	"slices"
	"testing"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	huitianv1 "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// goodRequest is a small, valid cycle: two 8-card nodes under one switch,
// one running backfill job, two queued jobs.
func goodRequest() *huitianv1.PlanRequest {
	cards := func() []*huitianv1.Card {
		var cs []*huitianv1.Card
		for i := range int32(8) {
			cs = append(cs, &huitianv1.Card{
				Index:        i,
				Uuid:         "GPU-0000",
				Model:        "H100-SXM5-80GB",
				MemoryBytes:  80 << 30,
				NumaNode:     i / 4,
				PciBusId:     "0000:1B:00.0",
				Nvlinks:      []*huitianv1.NvLink{{PeerIndex: (i + 1) % 8, Links: 18}},
				NvlinkIsland: "nvl0",
			})
		}
		return cs
	}
	job := func(id string, n int32) *huitianv1.JobSpec {
		return &huitianv1.JobSpec{
			Id:                       id,
			User:                     "alice",
			JobClass:                 "training",
			Cards:                    n,
			CardsPerNode:             0,
			Topology:                 huitianv1.Topology_TOPOLOGY_SAME_NODE,
			Comm:                     huitianv1.Comm_COMM_HIGH,
			TimeLimit:                durationpb.New(4 * time.Hour),
			Checkpointable:           true,
			CheckpointCost:           durationpb.New(2 * time.Minute),
			Backfill:                 huitianv1.BackfillPreference_BACKFILL_PREFERENCE_LOW_RISK_ONLY,
			MaxPreemptionProbability: 0.2,
			Priority:                 -3,
			SubmitTime:               timestamppb.New(t0.Add(-time.Hour)),
		}
	}
	return &huitianv1.PlanRequest{
		Now: timestamppb.New(t0),
		Cluster: &huitianv1.Cluster{
			Id: "c1",
			Nodes: []*huitianv1.Node{
				{Name: "n1", Cards: cards(), Domains: []string{"sw1"}},
				{Name: "n2", Cards: cards(), Domains: []string{"sw1"}, Unschedulable: true},
			},
			Domains: []*huitianv1.Domain{
				{Id: "pod1", Kind: huitianv1.DomainKind_DOMAIN_KIND_POD},
				{Id: "sw1", Kind: huitianv1.DomainKind_DOMAIN_KIND_SWITCH, Parent: "pod1"},
			},
		},
		Running: []*huitianv1.RunningJob{{
			Spec:           job("eval-1", 2),
			Cards:          []*huitianv1.CardRef{{Node: "n1", Index: 0}, {Node: "n1", Index: 1}},
			StartTime:      timestamppb.New(t0.Add(-10 * time.Minute)),
			Kind:           huitianv1.AllocationKind_ALLOCATION_KIND_BACKFILL,
			Progress:       0.5,
			ProtectedUntil: timestamppb.New(t0.Add(5 * time.Minute)),
		}},
		Queued: []*huitianv1.JobSpec{job("train-8", 8), job("eval-2", 1)},
		Options: &huitianv1.PlanOptions{
			Policy:           huitianv1.Policy_POLICY_HUITIAN,
			ReservationDepth: 1,
			TimeBudget:       durationpb.New(200 * time.Millisecond),
			OverrunGrace:     durationpb.New(5 * time.Minute),
		},
	}
}

// violation is one expected protovalidate violation: where, and which rule.
type violation struct{ field, rule string }

func violations(t *testing.T, err error) []violation {
	t.Helper()
	var verr *protovalidate.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("Validate: got %v, want a *protovalidate.ValidationError", err)
	}
	var got []violation
	for _, v := range verr.Violations {
		got = append(got, violation{protovalidate.FieldPathString(v.Proto.GetField()), v.Proto.GetRuleId()})
	}
	slices.SortFunc(got, func(a, b violation) int {
		return cmp.Or(cmp.Compare(a.field, b.field), cmp.Compare(a.rule, b.rule))
	})
	return got
}

func TestGoodRequestValidates(t *testing.T) {
	if err := protovalidate.Validate(goodRequest()); err != nil {
		t.Fatalf("Validate(good request) = %v, want nil", err)
	}
}

func TestBadRequestsNameTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(r *huitianv1.PlanRequest)
		want   []violation
	}{
		{"a queued job asking for no cards", func(r *huitianv1.PlanRequest) { r.Queued[0].Cards = 0 },
			[]violation{{"queued[0].cards", "int32.gte"}}},
		{"a preemption limit above one", func(r *huitianv1.PlanRequest) { r.Queued[1].MaxPreemptionProbability = 1.5 },
			[]violation{{"queued[1].max_preemption_probability", "double.gte_lte"}}},
		{"a queued job without an id", func(r *huitianv1.PlanRequest) { r.Queued[0].Id = "" },
			[]violation{{"queued[0].id", "string.min_len"}}},
		{"a running job's spec asking for no cards", func(r *huitianv1.PlanRequest) { r.Running[0].Spec.Cards = 0 },
			[]violation{{"running[0].spec.cards", "int32.gte"}}},
		{"a running job without a spec", func(r *huitianv1.PlanRequest) { r.Running[0].Spec = nil },
			[]violation{{"running[0].spec", "required"}}},
		{"a running job on no cards with progress above one", func(r *huitianv1.PlanRequest) {
			r.Running[0].Cards = nil
			r.Running[0].Progress = 1.01
		}, []violation{{"running[0].cards", "repeated.min_items"}, {"running[0].progress", "double.gte_lte"}}},
		{"a running job without a start time", func(r *huitianv1.PlanRequest) { r.Running[0].StartTime = nil },
			[]violation{{"running[0].start_time", "required"}}},
		{"no snapshot time", func(r *huitianv1.PlanRequest) { r.Now = nil },
			[]violation{{"now", "required"}}},
		{"no cluster", func(r *huitianv1.PlanRequest) { r.Cluster = nil },
			[]violation{{"cluster", "required"}}},
		{"a cluster without nodes", func(r *huitianv1.PlanRequest) { r.Cluster.Nodes = nil },
			[]violation{{"cluster.nodes", "repeated.min_items"}}},
		{"a node without cards or name", func(r *huitianv1.PlanRequest) {
			r.Cluster.Nodes[1].Cards = nil
			r.Cluster.Nodes[1].Name = ""
		}, []violation{{"cluster.nodes[1].cards", "repeated.min_items"}, {"cluster.nodes[1].name", "string.min_len"}}},
		{"a card with a negative index and an impossible NUMA node", func(r *huitianv1.PlanRequest) {
			r.Cluster.Nodes[0].Cards[3].Index = -1
			r.Cluster.Nodes[0].Cards[3].NumaNode = -2
		}, []violation{{"cluster.nodes[0].cards[3].index", "int32.gte"}, {"cluster.nodes[0].cards[3].numa_node", "int32.gte"}}},
		{"an NVLink with no links", func(r *huitianv1.PlanRequest) { r.Cluster.Nodes[0].Cards[2].Nvlinks[0].Links = 0 },
			[]violation{{"cluster.nodes[0].cards[2].nvlinks[0].links", "int32.gte"}}},
		{"an empty domain reference", func(r *huitianv1.PlanRequest) { r.Cluster.Nodes[0].Domains = []string{""} },
			[]violation{{"cluster.nodes[0].domains[0]", "string.min_len"}}},
		{"an undefined topology", func(r *huitianv1.PlanRequest) { r.Queued[0].Topology = 99 },
			[]violation{{"queued[0].topology", "enum.defined_only"}}},
		{"a zero time limit", func(r *huitianv1.PlanRequest) { r.Queued[0].TimeLimit = durationpb.New(0) },
			[]violation{{"queued[0].time_limit", "duration.gt"}}},
		{"no time limit", func(r *huitianv1.PlanRequest) { r.Queued[0].TimeLimit = nil },
			[]violation{{"queued[0].time_limit", "required"}}},
		{"no submit time", func(r *huitianv1.PlanRequest) { r.Queued[1].SubmitTime = nil },
			[]violation{{"queued[1].submit_time", "required"}}},
		{"a negative checkpoint cost and requeue count", func(r *huitianv1.PlanRequest) {
			r.Queued[0].CheckpointCost = durationpb.New(-time.Second)
			r.Queued[0].RequeueCount = -1
		}, []violation{{"queued[0].checkpoint_cost", "duration.gte"}, {"queued[0].requeue_count", "int32.gte"}}},
		{"a negative reservation depth and time budget", func(r *huitianv1.PlanRequest) {
			r.Options.ReservationDepth = -1
			r.Options.TimeBudget = durationpb.New(-time.Millisecond)
		}, []violation{{"options.reservation_depth", "int32.gte"}, {"options.time_budget", "duration.gte"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := goodRequest()
			tt.mutate(r)
			got := violations(t, protovalidate.Validate(r))
			if !slices.Equal(got, tt.want) {
				t.Errorf("violations:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestResponseRules(t *testing.T) {
	good := &huitianv1.PlanResponse{
		Starts: []*huitianv1.Start{{
			JobId:                 "eval-2",
			Cards:                 []*huitianv1.CardRef{{Node: "n1", Index: 2}},
			Kind:                  huitianv1.AllocationKind_ALLOCATION_KIND_BACKFILL,
			ExpectedRetention:     durationpb.New(time.Hour),
			PreemptionProbability: 0.1,
			ProtectedUntil:        timestamppb.New(t0.Add(6 * time.Minute)),
			Fragment:              huitianv1.FragmentClass_FRAGMENT_CLASS_TEMPORAL,
			Reason:                "fits before train-8's reservation",
		}},
		Reservations: []*huitianv1.Reservation{{
			JobId:      "train-8",
			Cards:      []*huitianv1.CardRef{{Node: "n1", Index: 0}},
			StartTime:  timestamppb.New(t0.Add(time.Hour)),
			Confidence: 0.9,
		}},
		Preemptions: []*huitianv1.Preemption{{
			JobId: "eval-1", Action: huitianv1.PreemptionAction_PREEMPTION_ACTION_SUSPEND,
			Notice: durationpb.New(2 * time.Minute), ForJobId: "train-8",
		}},
		Stats: &huitianv1.SolverStats{
			Solver: "lp+greedy", LpBound: 10, Objective: 9, Gap: 0.1,
			SolveTime: durationpb.New(3 * time.Millisecond), Candidates: 4, LpRows: 12, LpCols: 20,
		},
		Pending: []*huitianv1.Pending{{
			JobId: "big-64", Reason: huitianv1.PendingReason_PENDING_REASON_NEVER_FITS, Message: "64 cards > 16 in cluster",
		}},
	}
	if err := protovalidate.Validate(good); err != nil {
		t.Fatalf("Validate(good response) = %v, want nil", err)
	}
	bad := proto.CloneOf(good)
	bad.Starts[0].PreemptionProbability = 1.5
	bad.Reservations[0].StartTime = nil
	bad.Pending[0].JobId = ""
	want := []violation{
		{"pending[0].job_id", "string.min_len"},
		{"reservations[0].start_time", "required"},
		{"starts[0].preemption_probability", "double.gte_lte"},
	}
	if got := violations(t, protovalidate.Validate(bad)); !slices.Equal(got, want) {
		t.Errorf("violations:\n got %v\nwant %v", got, want)
	}
}

// TestBindingNames pins the names other packages and clients are written
// against: the RPC's procedure and every enum value name.
func TestBindingNames(t *testing.T) {
	if got, want := huitianv1connect.PlannerServicePlanProcedure, "/huitian.v1.PlannerService/Plan"; got != want {
		t.Errorf("Plan procedure = %q, want %q", got, want)
	}
	enums := map[protoreflect.EnumDescriptor][]string{
		huitianv1.DomainKind(0).Descriptor(): {"DOMAIN_KIND_UNSPECIFIED", "DOMAIN_KIND_SWITCH", "DOMAIN_KIND_NVLINK", "DOMAIN_KIND_POD"},
		huitianv1.Topology(0).Descriptor(): {"TOPOLOGY_UNSPECIFIED", "TOPOLOGY_ANY", "TOPOLOGY_SAME_NODE",
			"TOPOLOGY_SAME_NVLINK_ISLAND", "TOPOLOGY_SAME_SWITCH"},
		huitianv1.Comm(0).Descriptor(): {"COMM_UNSPECIFIED", "COMM_NONE", "COMM_LOW", "COMM_HIGH"},
		huitianv1.BackfillPreference(0).Descriptor(): {"BACKFILL_PREFERENCE_UNSPECIFIED", "BACKFILL_PREFERENCE_ALLOW",
			"BACKFILL_PREFERENCE_OPT_OUT", "BACKFILL_PREFERENCE_LOW_RISK_ONLY"},
		huitianv1.AllocationKind(0).Descriptor(): {"ALLOCATION_KIND_UNSPECIFIED", "ALLOCATION_KIND_REGULAR", "ALLOCATION_KIND_BACKFILL"},
		huitianv1.Policy(0).Descriptor(): {"POLICY_UNSPECIFIED", "POLICY_FCFS", "POLICY_EASY", "POLICY_CONSERVATIVE",
			"POLICY_EASY_SJBF", "POLICY_HYBRID_DEPTH", "POLICY_HUITIAN", "POLICY_HUITIAN_GREEDY"},
		huitianv1.PreemptionAction(0).Descriptor(): {"PREEMPTION_ACTION_UNSPECIFIED", "PREEMPTION_ACTION_SUSPEND", "PREEMPTION_ACTION_REQUEUE"},
		huitianv1.FragmentClass(0).Descriptor(): {"FRAGMENT_CLASS_UNSPECIFIED", "FRAGMENT_CLASS_FREE", "FRAGMENT_CLASS_INTRA_NODE",
			"FRAGMENT_CLASS_CROSS_NODE", "FRAGMENT_CLASS_TEMPORAL"},
		huitianv1.PendingReason(0).Descriptor(): {"PENDING_REASON_UNSPECIFIED", "PENDING_REASON_RESOURCES", "PENDING_REASON_RESERVED",
			"PENDING_REASON_PRIORITY", "PENDING_REASON_TOPOLOGY", "PENDING_REASON_NEVER_FITS", "PENDING_REASON_OPT_OUT",
			"PENDING_REASON_RISK", "PENDING_REASON_RUNTIME_CAP", "PENDING_REASON_POLICY"},
	}
	for ed, want := range enums {
		var got []string
		for i := range ed.Values().Len() {
			v := ed.Values().Get(i)
			if int(v.Number()) != i {
				t.Errorf("%s: value %s has number %d, want %d", ed.FullName(), v.Name(), v.Number(), i)
			}
			got = append(got, string(v.Name()))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s values:\n got %v\nwant %v", ed.FullName(), got, want)
		}
	}
}

// TestReservationNamesCardsOrACount: a reservation names its cards, or on
// a flat cluster its count alone; a count beside cards must be theirs.
func TestReservationNamesCardsOrACount(t *testing.T) {
	at := timestamppb.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	two := []*huitianv1.CardRef{{Node: "n1", Index: 0}, {Node: "n1", Index: 1}}
	for _, tc := range []struct {
		name string
		r    *huitianv1.Reservation
		want []violation
	}{
		{"cards", &huitianv1.Reservation{JobId: "j", Cards: two, StartTime: at}, nil},
		{"cards and their count", &huitianv1.Reservation{JobId: "j", Cards: two, Count: 2, StartTime: at}, nil},
		{"a count alone", &huitianv1.Reservation{JobId: "j", Count: 4096, StartTime: at}, nil},
		{"neither", &huitianv1.Reservation{JobId: "j", StartTime: at}, []violation{{"", "reservation.cards_or_count"}}},
		{"a count not the cards'", &huitianv1.Reservation{JobId: "j", Cards: two, Count: 3, StartTime: at}, []violation{{"", "reservation.count_of_cards"}}},
		{"a negative count", &huitianv1.Reservation{JobId: "j", Count: -1, StartTime: at}, []violation{{"", "reservation.cards_or_count"}, {"count", "int32.gte"}}},
	} {
		err := protovalidate.Validate(tc.r)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want valid", tc.name, err)
			}
			continue
		}
		if got := violations(t, err); !slices.Equal(got, tc.want) {
			t.Errorf("%s: violations %v, want %v", tc.name, got, tc.want)
		}
	}
}
