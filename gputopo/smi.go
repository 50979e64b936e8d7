package gputopo

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits that keep a hostile or corrupt matrix from costing much.
const (
	maxSMICards = 1024
	maxSMIIndex = 1 << 16
	maxSMILinks = 1024
	maxSMILine  = 1 << 20
)

// SMIError is a problem in the text of `nvidia-smi topo -m`, at a line and a
// column (both from 1; column counts characters, a tab as one, and is 0 when
// the problem is the line as a whole).
type SMIError struct {
	Line, Column int
	Msg          string
}

func (e *SMIError) Error() string {
	if e.Column == 0 {
		return fmt.Sprintf("gputopo: nvidia-smi topo -m: line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("gputopo: nvidia-smi topo -m: line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

func smiErr(line, col int, format string, args ...any) *SMIError {
	return &SMIError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// token is a whitespace-separated word of a line and the column it starts at.
type token struct {
	text string
	col  int
}

// tokenize splits a line at white space, dropping terminal escape sequences
// (nvidia-smi underlines its header with them) and keeping each word's
// column in the original line.
func tokenize(line string) []token {
	var out []token
	var cur strings.Builder
	start, col := 0, 0
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, token{text: cur.String(), col: start})
			cur.Reset()
		}
	}
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRuneInString(line[i:])
		i += size
		col++
		switch {
		case r == 0x1b:
			// ESC [ parameters final-byte, or ESC and one character.
			if i < len(line) && line[i] == '[' {
				i++
				col++
				for i < len(line) {
					c := line[i]
					i++
					col++
					if c >= 0x40 && c <= 0x7e {
						break
					}
				}
			} else if i < len(line) {
				_, size := utf8.DecodeRuneInString(line[i:])
				i += size
				col++
			}
		case unicode.IsSpace(r):
			flush()
		default:
			if cur.Len() == 0 {
				start = col
			}
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}

// Names of the columns after the matrix; "NUMA" is what huitian's own
// matrix prints.
const (
	colCPUAffinity  = "CPU Affinity"
	colNUMAAffinity = "NUMA Affinity"
	colNUMA         = "NUMA"
	colGPUNUMAID    = "GPU NUMA ID"
)

var multiWordColumns = [][]string{
	{"CPU", "Affinity"},
	{"NUMA", "Affinity"},
	{"GPU", "NUMA", "ID"},
}

func isTrailingColumn(name string) bool {
	switch name {
	case colCPUAffinity, colNUMAAffinity, colNUMA, colGPUNUMAID:
		return true
	}
	return false
}

// mergeHeader joins the words of the multi-word column names.
func mergeHeader(toks []token) []token {
	var out []token
	for i := 0; i < len(toks); {
		merged := false
		for _, words := range multiWordColumns {
			if i+len(words) > len(toks) {
				continue
			}
			ok := true
			for k, w := range words {
				if toks[i+k].text != w {
					ok = false
					break
				}
			}
			if ok {
				out = append(out, token{text: strings.Join(words, " "), col: toks[i].col})
				i += len(words)
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, toks[i])
			i++
		}
	}
	return out
}

// gpuLabel returns n for "GPU<n>".
func gpuLabel(s string) (int, bool) {
	digits, ok := strings.CutPrefix(s, "GPU")
	if !ok || digits == "" || len(digits) > 6 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// smiCell is one parsed GPU-to-GPU cell.
type smiCell struct {
	level     Level
	links     int
	text      string
	line, col int
	set       bool
}

// parseCell reads a matrix value other than "X".
func parseCell(s string) (Level, int, bool) {
	switch s {
	case "PIX":
		return LevelSingleSwitch, 0, true
	case "PXB":
		return LevelMultiSwitch, 0, true
	case "PHB":
		return LevelHostBridge, 0, true
	case "NODE":
		return LevelNUMANode, 0, true
	case "SYS", "SOC": // SOC is what drivers before R384 printed for SYS
		return LevelSystem, 0, true
	case "BRD":
		return LevelBoard, 0, true
	case "N/A":
		return LevelUnknown, 0, true
	}
	if digits, ok := strings.CutPrefix(s, "NV"); ok && digits != "" && len(digits) <= 4 {
		n, err := strconv.Atoi(digits)
		if err == nil && n >= 1 && n <= maxSMILinks && digits[0] != '+' && digits[0] != '-' {
			return LevelUnknown, n, true
		}
	}
	return LevelUnknown, 0, false
}

func isCellValue(s string) bool {
	if s == "X" {
		return true
	}
	_, _, ok := parseCell(s)
	return ok
}

// ParseSMI reads the text that `nvidia-smi topo -m` prints and returns the
// topology it describes for the node nodeName: NVLink islands from the NV#
// cells, PCIe levels from PIX/PXB/PHB/NODE/SYS, and each card's NUMA node from
// the "NUMA Affinity" column (or, when the output has none, by numbering the
// distinct "CPU Affinity" sets in the order of their first CPU — a guess that
// holds on the usual one-node-per-socket machines). NIC rows and columns, the
// legend, tabs or spaces, and the terminal escapes of the header are all
// tolerated. The matrix must be square and symmetric, with X on its diagonal.
//
// nvidia-smi gives no UUID, model, memory or PCI bus id, and prints NV# in
// place of the PCIe level of linked pairs, so those stay unknown.
func ParseSMI(r io.Reader, nodeName string) (*Topology, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxSMILine)

	var (
		lineNo     int
		header     []token // merged header columns
		headerLine int
		gpuCols    = map[int]int{} // GPU index → header column position
		nMatrix    int             // columns before the trailing ones
		trailing   []token
		rows       = map[int][]smiCell{} // GPU index → cells by header position
		rowLine    = map[int]int{}
		trailVals  = map[int][]token{} // GPU index → trailing values by trailing position
		order      []int               // GPU indexes in header order
	)
	for sc.Scan() {
		lineNo++
		toks := tokenize(sc.Text())
		if len(toks) == 0 {
			if len(rows) > 0 {
				break // the blank line after the matrix
			}
			continue
		}
		if toks[0].text == "Legend:" {
			break
		}
		if header == nil {
			// 1. Find the header: the first line naming a GPU column.
			if !slices.ContainsFunc(toks, func(t token) bool { _, ok := gpuLabel(t.text); return ok }) {
				continue // text before the matrix
			}
			if _, ok := gpuLabel(toks[0].text); ok && len(toks) > 1 && isCellValue(toks[1].text) {
				return nil, smiErr(lineNo, toks[0].col, "a GPU row before the header row (GPU0 GPU1 …)")
			}
			header, headerLine = mergeHeader(toks), lineNo
			nMatrix = len(header)
			for p, h := range header {
				if isTrailingColumn(h.text) {
					nMatrix = p
					break
				}
			}
			trailing = header[nMatrix:]
			for p, h := range header[:nMatrix] {
				idx, ok := gpuLabel(h.text)
				if !ok {
					continue // a NIC, or another device nvidia-smi lists
				}
				if idx >= maxSMIIndex {
					return nil, smiErr(lineNo, h.col, "GPU index %d is too large", idx)
				}
				if _, dup := gpuCols[idx]; dup {
					return nil, smiErr(lineNo, h.col, "column %s appears twice", h.text)
				}
				if len(gpuCols) == maxSMICards {
					return nil, smiErr(lineNo, h.col, "more than %d GPU columns", maxSMICards)
				}
				gpuCols[idx] = p
				order = append(order, idx)
			}
			for _, h := range trailing {
				if _, ok := gpuLabel(h.text); ok {
					return nil, smiErr(lineNo, h.col, "column %s after the %q column", h.text, trailing[0].text)
				}
			}
			continue
		}

		// 2. A row: GPU rows are read, NIC rows and others skipped.
		idx, ok := gpuLabel(toks[0].text)
		if !ok {
			continue
		}
		label := toks[0]
		if _, known := gpuCols[idx]; !known {
			return nil, smiErr(lineNo, label.col, "row %s has no column in the header (line %d)", label.text, headerLine)
		}
		if prev, dup := rowLine[idx]; dup {
			return nil, smiErr(lineNo, label.col, "row %s appears twice (first on line %d)", label.text, prev)
		}
		cells := toks[1:]
		if len(cells) < nMatrix {
			end := label.col + utf8.RuneCountInString(label.text)
			if len(cells) > 0 {
				last := cells[len(cells)-1]
				end = last.col + utf8.RuneCountInString(last.text)
			}
			return nil, smiErr(lineNo, end, "row %s has %d %s where the header has %d columns", label.text, len(cells), map[bool]string{true: "cell", false: "cells"}[len(cells) == 1], nMatrix)
		}
		row := make([]smiCell, nMatrix)
		for p, c := range cells[:nMatrix] {
			col, isGPU := gpuLabel(header[p].text)
			if !isGPU {
				continue
			}
			cell := smiCell{text: c.text, line: lineNo, col: c.col, set: true}
			switch {
			case col == idx && c.text != "X":
				return nil, smiErr(lineNo, c.col, "%s/%s is %q, want X on the diagonal", label.text, header[p].text, c.text)
			case col == idx:
			case c.text == "X":
				return nil, smiErr(lineNo, c.col, "%s/%s is X off the diagonal", label.text, header[p].text)
			default:
				lvl, links, ok := parseCell(c.text)
				if !ok {
					return nil, smiErr(lineNo, c.col, "%s/%s: unknown connection %q (want X, NV#, PIX, PXB, PHB, NODE or SYS)", label.text, header[p].text, c.text)
				}
				cell.level, cell.links = lvl, links
			}
			row[p] = cell
		}
		vals := cells[nMatrix:]
		if len(vals) > len(trailing) {
			extra := vals[len(trailing)]
			return nil, smiErr(lineNo, extra.col, "row %s has an extra cell %q", label.text, extra.text)
		}
		// Empty cells vanish between tabs; nvidia-smi leaves the leading
		// affinity cells empty when it has nothing to say, so align right.
		aligned := make([]token, len(trailing))
		copy(aligned[len(trailing)-len(vals):], vals)
		rows[idx], rowLine[idx], trailVals[idx] = row, lineNo, aligned
	}
	if err := sc.Err(); err != nil {
		return nil, smiErr(lineNo+1, 0, "%v", err)
	}
	if header == nil {
		return nil, smiErr(max(lineNo, 1), 0, "no header row naming GPU columns (GPU0 GPU1 …); is this `nvidia-smi topo -m` output?")
	}
	if len(order) == 0 {
		return nil, smiErr(headerLine, 0, "the header names no GPU column")
	}
	for _, idx := range order {
		if _, ok := rows[idx]; !ok {
			h := header[gpuCols[idx]]
			return nil, smiErr(headerLine, h.col, "column %s has no row", h.text)
		}
	}

	// 3. Build the topology, checking that the matrix is symmetric.
	slices.Sort(order)
	t := newTopology(nodeName, "nvidia-smi", len(order))
	for a, ia := range order {
		t.Cards[a] = Card{Index: ia, NUMANode: -1}
		for b, ib := range order {
			if a == b {
				continue
			}
			c := rows[ia][gpuCols[ib]]
			if b < a {
				o := rows[ib][gpuCols[ia]]
				if o.level != c.level || o.links != c.links {
					later, earlier := c, o
					lr, lc, er, ec := ia, ib, ib, ia
					if o.line > c.line {
						later, earlier = o, c
						lr, lc, er, ec = ib, ia, ia, ib
					}
					return nil, smiErr(later.line, later.col, "GPU%d/GPU%d is %s but GPU%d/GPU%d on line %d is %s",
						lr, lc, later.text, er, ec, earlier.line, earlier.text)
				}
			}
			t.Pairs[a][b] = Pair{Level: c.level, Links: c.links}
		}
	}
	if err := smiNUMA(t, order, trailing, trailVals, rowLine); err != nil {
		return nil, err
	}
	t.derive()
	return t, nil
}

// smiNUMA sets each card's NUMA node from the trailing columns.
func smiNUMA(t *Topology, order []int, trailing []token, vals map[int][]token, rowLine map[int]int) error {
	numaCol, cpuCol := -1, -1
	for p, h := range trailing {
		switch h.text {
		case colNUMAAffinity, colNUMA:
			numaCol = p
		case colCPUAffinity:
			cpuCol = p
		}
	}
	if numaCol >= 0 {
		for a, idx := range order {
			v := vals[idx][numaCol]
			n, err := numaValue(v.text)
			if err != nil {
				return smiErr(rowLine[idx], v.col, "GPU%d %s: %v", idx, trailing[numaCol].text, err)
			}
			t.Cards[a].NUMANode = n
		}
		return nil
	}
	if cpuCol < 0 {
		return nil
	}
	// No NUMA column: number the distinct CPU sets by their first CPU.
	first := map[string]int{}
	for _, idx := range order {
		v := vals[idx][cpuCol]
		lo, ok, err := cpuListFirst(v.text)
		if err != nil {
			return smiErr(rowLine[idx], v.col, "GPU%d %s: %v", idx, colCPUAffinity, err)
		}
		if ok {
			first[v.text] = lo
		}
	}
	sets := make([]string, 0, len(first))
	for s := range first {
		sets = append(sets, s)
	}
	slices.SortFunc(sets, func(x, y string) int {
		if first[x] != first[y] {
			return first[x] - first[y]
		}
		return strings.Compare(x, y)
	})
	for a, idx := range order {
		if i := slices.Index(sets, vals[idx][cpuCol].text); i >= 0 {
			t.Cards[a].NUMANode = i
		}
	}
	return nil
}

// numaValue reads a "NUMA Affinity" cell: a node number, or -1 for "N/A",
// an empty cell, or a list of several nodes.
func numaValue(s string) (int, error) {
	switch s {
	case "", "N/A", "-1": // huitian's own matrix prints -1
		return -1, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n < maxSMIIndex && s[0] != '+' {
		return n, nil
	}
	if _, _, err := cpuListFirst(s); err != nil {
		return -1, fmt.Errorf("%q is not a NUMA node", s)
	}
	return -1, nil // several nodes: no single one is closest
}

// cpuListFirst checks a Linux CPU list ("0-55,112-167") and returns its first
// CPU; ok is false for "N/A" or an empty cell.
func cpuListFirst(s string) (first int, ok bool, err error) {
	if s == "" || s == "N/A" {
		return 0, false, nil
	}
	first = -1
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || lo == "" || strings.HasPrefix(lo, "+") || strings.HasPrefix(hi, "+") {
			return 0, false, fmt.Errorf("%q is not a CPU list", s)
		}
		if first < 0 || a < first {
			first = a
		}
	}
	return first, true, nil
}
