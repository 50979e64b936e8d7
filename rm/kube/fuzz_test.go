package kube

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/huitian/huitian/internal/wire"
)

// What a user writes on a Job (its annotations, parallelism, deadline and
// claim count) and what the adapter wrote there before (the planned cards)
// are read without a panic, and whatever the adapter accepts, the service
// accepts too: the adapter never sends a job spec or cards that the
// contract's rules refuse, nor numbers it wrapped around.

func FuzzDecodeCards(f *testing.F) {
	for _, s := range []string{"n1:0,5;n2:3", "n1:0", "", "n1", "n1:", "n1:a", "n1:-1", "n1:2147483648", "n1:4294967297", "a:1;a:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cards, err := DecodeCards(s)
		if err != nil {
			return
		}
		if len(cards) == 0 {
			t.Fatalf("DecodeCards(%q) accepted no cards", s)
		}
		var want []string
		for _, c := range cards {
			if c.GetNode() == "" || c.GetIndex() < 0 {
				t.Fatalf("DecodeCards(%q) accepted %v", s, c)
			}
			want = append(want, c.GetNode()+"/"+strconv.Itoa(int(c.GetIndex())))
		}
		// Every index is the number written, not one wrapped into int32.
		for part := range strings.SplitSeq(s, ";") {
			_, list, _ := strings.Cut(part, ":")
			for x := range strings.SplitSeq(list, ",") {
				if n, err := strconv.ParseInt(x, 10, 64); err != nil || n > 1<<31-1 {
					t.Fatalf("DecodeCards(%q) accepted index %q", s, x)
				}
			}
		}
		// What encodeCards writes of them reads back as the same cards.
		back, err := DecodeCards(encodeCards(cards))
		if err != nil {
			t.Fatalf("re-read %q: %v", encodeCards(cards), err)
		}
		var got []string
		for _, c := range back {
			got = append(got, c.GetNode()+"/"+strconv.Itoa(int(c.GetIndex())))
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Fatalf("round trip of %q: %v, then %v", s, want, got)
		}
	})
}

func FuzzJobSpec(f *testing.F) {
	f.Add(int32(2), int64(3600), int64(8), "true", "2m", "low-risk", "0.2", "same-switch", "high", "5", "1")
	f.Add(int32(1), int64(60), int64(1), "false", "0s", "allow", "1", "any", "none", "-3", "0")
	f.Add(int32(65536), int64(1)<<40, int64(1)<<32+1, "1", "-1m", "opt-out", "NaN", "same-node", "low", "99999999999", "x")
	f.Fuzz(func(t *testing.T, par int32, deadline, count int64, ckpt, cost, backfill, prob, topo, comm, prio, requeues string) {
		cfg := Defaults()
		ann := map[string]string{AnnCheckpointable: ckpt, AnnCheckpointCost: cost, AnnBackfill: backfill,
			AnnMaxPreemptProb: prob, AnnTopology: topo, AnnComm: comm, AnnPriority: prio, AnnRequeueCount: requeues}
		j := testJob("fz", par, ann)
		j.Spec.ActiveDeadlineSeconds = &deadline
		cr, err := parseClaim("gpus", "fz-gpus", testClaim(count))
		if err != nil {
			return
		}
		spec, err := jobSpec(j, cr, &cfg)
		if err != nil {
			return
		}
		if int64(spec.GetCards()) != max(count, 1)*int64(par) {
			t.Fatalf("parallelism %d × %d cards accepted as %d cards", par, count, spec.GetCards())
		}
		if spec.GetTimeLimit().AsDuration().Seconds() != float64(deadline) {
			t.Fatalf("activeDeadlineSeconds %d accepted as a limit of %v", deadline, spec.GetTimeLimit().AsDuration())
		}
		// The service takes what the adapter sends.
		probs, err := wire.Problems(spec)
		if err != nil {
			t.Fatal(err)
		}
		if len(probs) > 0 {
			t.Fatalf("accepted %v, which the service refuses: %v", spec, probs)
		}
	})
}
