package trace

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/huitian/huitian/model"
)

// ErrNoTimes is returned for an openb pod list without times (the multigpuNN lists are
// placement-only: pods in order, no creation, scheduling or deletion time).
var ErrNoTimes = errors.New("trace: openb: pod list has no creation or deletion times: nothing to replay")

// ReadOpenB reads an Alibaba GPU 2023 "openb" pod list (clusterdata
// cluster-trace-gpu-v2023, Weng et al., ATC'23): name, num_gpu, gpu_milli, gpu_spec,
// pod_phase, creation_time, deletion_time, scheduled_time, in seconds from the trace
// start.
//
// Each pod: Submit = creation_time, Runtime = deletion_time − scheduled_time, Cards =
// num_gpu, CardModel = gpu_spec (allowed models, "|"-separated, "" for any). A
// multi-GPU pod lives on one node: topology same-node. Dropped: CPU-only pods
// (DropNoCards), pods never scheduled (DropNotStarted, pod_phase Pending), zero or
// negative lifetimes. A pod with gpu_milli < 1000 shares one GPU: by default it counts
// as one card (FractionalCard), with FractionalSkip it is dropped (DropFractional).
// Pods still running at trace end are right-censored (their deletion_time is the trace
// end); they are kept and counted in Notes. There is no user estimate: Limit follows
// opts.Estimate.
func ReadOpenB(r io.Reader, opts Options) (*Trace, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	t, err := readOpenB(r, opts)
	if err != nil {
		return nil, fmt.Errorf("trace: openb: %w", err)
	}
	return t, nil
}

func readOpenB(r io.Reader, opts Options) (*Trace, error) {
	tab, err := openCSV(r)
	if err != nil {
		return nil, err
	}
	if _, ok := tab.index["creation_time"]; !ok {
		if _, ok := tab.index["deletion_time"]; !ok {
			return nil, parseErr(1, "header", strings.Join(tab.header, ","), ErrNoTimes)
		}
	}
	var (
		name, gpus, milli, spec, phase, created, deleted, sched int
		errs                                                    []error
	)
	for _, c := range []struct {
		dst      *int
		name     string
		optional bool
	}{
		{&name, "name", false}, {&gpus, "num_gpu", false}, {&milli, "gpu_milli", true},
		{&spec, "gpu_spec", true}, {&phase, "pod_phase", true}, {&created, "creation_time", false},
		{&deleted, "deletion_time", false}, {&sched, "scheduled_time", false},
	} {
		i, err := tab.col(c.name, c.name)
		if err != nil && c.optional {
			i, err = -1, nil
		}
		*c.dst = i
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t := newTrace()
	var malformed, fractional, censored, noLimit int
	for {
		rec, line, err := tab.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		num := func(i int, field string) (int64, bool, error) {
			s, ok := get(rec, i)
			if !ok {
				return 0, false, nil
			}
			v, err := parseNum(s)
			if err != nil {
				return 0, false, parseErr(line, "column "+field, s, err)
			}
			return v, true, nil
		}
		// 1. Parse every used value, so that a malformed row is one whatever it holds.
		var (
			v  [5]int64
			ok [5]bool
		)
		for i, c := range []struct {
			col   int
			field string
		}{{gpus, "num_gpu"}, {milli, "gpu_milli"}, {created, "creation_time"}, {sched, "scheduled_time"}, {deleted, "deletion_time"}} {
			v[i], ok[i], err = num(c.col, c.field)
			if err == nil && i < 2 && (v[i] < 0 || v[i] > maxCards) {
				s, _ := get(rec, c.col)
				err = parseErr(line, "column "+c.field, s, errRange)
			}
			if err != nil {
				break
			}
		}
		if err != nil {
			if opts.SkipMalformed {
				malformed++
				t.drop(DropMalformed)
				continue
			}
			return nil, err
		}
		nGPU, gMilli, create, start, end := v[0], v[1], v[2], v[3], v[4]
		if !ok[1] {
			gMilli = 1000
		}

		// 2. Drop what cannot run as a GPU job.
		switch {
		case !ok[0] || nGPU == 0:
			t.drop(DropNoCards)
			continue
		case !ok[2] || create < 0:
			t.drop(DropSubmit)
			continue
		case !ok[3]:
			t.drop(DropNotStarted)
			continue
		case !ok[4]:
			t.drop(DropNotEnded)
			continue
		case end < start:
			t.drop(DropBadTime)
			continue
		case end == start:
			t.drop(DropRuntime)
			continue
		}
		if gMilli < 1000 {
			if opts.Fractional == FractionalSkip {
				t.drop(DropFractional)
				continue
			}
			fractional++
		}

		// 3. Keep.
		j := Job{Submit: create, Runtime: end - start}
		j.ID, _ = get(rec, name)
		if j.ID == "" {
			j.ID = "L" + strconv.Itoa(line)
		}
		if p, _ := get(rec, phase); strings.EqualFold(p, "Running") {
			censored++
		}
		cards := int(nGPU)
		j.Spec.Cards = cards
		if cards > 1 {
			j.Spec.CardsPerNode, j.Spec.Topology, j.Spec.Comm = cards, model.TopologySameNode, model.CommHigh
		}
		if m, ok := get(rec, spec); ok {
			j.Spec.CardModel = normalizeModels(m)
		}
		noLimit++
		j.Limit = LimitFor(j.Runtime, opts)
		t.keep(j)
	}
	if malformed > 0 {
		t.notef("%d malformed rows dropped", malformed)
	}
	if fractional > 0 {
		t.notef("%d pods share a GPU (gpu_milli < 1000): each counted as one whole card", fractional)
	}
	if censored > 0 {
		t.notef("%d pods still Running at trace end: runtime right-censored at the trace end", censored)
	}
	if noLimit > 0 {
		t.Notes = append(t.Notes, estimateNote(noLimit, "user estimate", opts))
	}
	SortBySubmit(t.Jobs)
	return t, nil
}

// Node is one machine of a node list.
type Node struct {
	Name      string
	Cards     int    // GPUs
	Model     string // GPU model, "" if unknown
	CPUMilli  int64  // CPU in thousandths of a core; 0 if unknown
	MemoryMiB int64  // 0 if unknown
}

// NodeList is a cluster read from a node list.
type NodeList struct {
	Nodes   []Node // in file order
	Dropped map[string]int
	Notes   []string
}

// ReadNodes reads a GPU node list CSV so that a simulator can build the cluster:
// openb's (sn, cpu_milli, memory_mib, gpu, model) or the 2026 spot trace's (gpu_model,
// gpu_capacity_num, cpu_num, node_name; cpu_num in cores). Nodes without GPUs are
// dropped (DropNoCards).
func ReadNodes(r io.Reader) (*NodeList, error) {
	nl, err := readNodes(r)
	if err != nil {
		return nil, fmt.Errorf("trace: nodes: %w", err)
	}
	return nl, nil
}

func readNodes(r io.Reader) (*NodeList, error) {
	tab, err := openCSV(r)
	if err != nil {
		return nil, err
	}
	find := func(names ...string) int {
		for _, n := range names {
			if i, ok := tab.index[n]; ok {
				return i
			}
		}
		return -1
	}
	var (
		name  = find("sn", "node_name", "name", "node")
		gpus  = find("gpu", "gpu_capacity_num", "num_gpu", "gpus")
		model = find("model", "gpu_model")
		cpuM  = find("cpu_milli")
		cpuN  = find("cpu_num", "cpus")
		mem   = find("memory_mib")
	)
	if gpus < 0 {
		return nil, parseErr(1, "header", strings.Join(tab.header, ","), errors.New("no GPU count column (gpu, gpu_capacity_num, num_gpu or gpus)"))
	}
	nl := &NodeList{Dropped: map[string]int{}}
	for {
		rec, line, err := tab.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		num := func(i int) (int64, error) {
			s, ok := get(rec, i)
			if !ok {
				return 0, nil
			}
			v, err := parseNum(s)
			if err == nil && (v < 0 || v > maxSeconds/1000) {
				err = errRange
			}
			if err != nil {
				return 0, parseErr(line, "column "+tab.header[i], s, err)
			}
			return v, nil
		}
		n := Node{}
		g, err := num(gpus)
		if err == nil && g > maxCards {
			err = parseErr(line, "column "+tab.header[gpus], rec[gpus], errRange)
		}
		if err != nil {
			return nil, err
		}
		if n.CPUMilli, err = num(cpuM); err != nil {
			return nil, err
		}
		if n.CPUMilli == 0 {
			c, err := num(cpuN)
			if err != nil {
				return nil, err
			}
			n.CPUMilli = c * 1000
		}
		if n.MemoryMiB, err = num(mem); err != nil {
			return nil, err
		}
		if g == 0 {
			nl.Dropped[DropNoCards]++
			continue
		}
		n.Cards = int(g)
		n.Name, _ = get(rec, name)
		if n.Name == "" {
			n.Name = "L" + strconv.Itoa(line)
		}
		n.Model, _ = get(rec, model)
		nl.Nodes = append(nl.Nodes, n)
	}
	return nl, nil
}
