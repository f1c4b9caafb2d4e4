package survival

import (
	"fmt"
	"math"
)

// kmTable is right-censored data tabulated on the grid of its distinct
// times: events[g][i] and censor[g][i] count group g's records at times[i].
type kmTable struct {
	times   []float64
	events  [][]float64
	censor  [][]float64
	nGroups int
}

// atRisk returns group g's at-risk, event and censoring counts on the grid
// (at-risk at times[i] = records of g with time >= times[i]).
func (t *kmTable) atRisk(g int) (nRisk, nEvent, nCensor []float64) {
	n := len(t.times)
	nRisk = make([]float64, n)
	acc := 0.0
	ev, ce := t.events[g], t.censor[g]
	for i := n - 1; i >= 0; i-- {
		acc += ev[i] + ce[i]
		nRisk[i] = acc
	}
	return nRisk, ev, ce
}

// kmMaxCountingSpan bounds the counting path's histogram length beyond the
// number of records.
const kmMaxCountingSpan = 1 << 16

// kmTabulate validates the records and tabulates them on their distinct
// times. group may be nil (one group). Non-negative integer times within a
// modest span use a histogram; other times are radix sorted.
func kmTabulate(time []float64, event []bool, group []int, nGroups int) (*kmTable, error) {
	n := len(time)
	if group != nil && len(group) != n {
		return nil, fmt.Errorf("%d times but %d group labels", n, len(group))
	}
	integer := true
	maxT := 0.0
	for i, t := range time {
		if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
			return nil, fmt.Errorf("record %d: time must be finite and >= 0", i)
		}
		if t != math.Trunc(t) {
			integer = false
		}
		if t > maxT {
			maxT = t
		}
		if group != nil && (group[i] < 0 || group[i] >= nGroups) {
			return nil, fmt.Errorf("record %d: group %d outside [0, %d)", i, group[i], nGroups)
		}
	}
	if n >= math.MaxInt32 {
		return nil, fmt.Errorf("%d records exceed the supported maximum", n)
	}
	if integer && (maxT+1)*float64(nGroups) < float64(4*n+kmMaxCountingSpan) {
		return kmTabulateCounting(time, event, group, nGroups, int(maxT)), nil
	}
	return kmTabulateSorted(time, event, group, nGroups), nil
}

func kmTabulateCounting(time []float64, event []bool, group []int, nGroups, maxT int) *kmTable {
	span := maxT + 1
	// one flat array per group: [event counts | censor counts]
	cnt := make([]int32, 2*span*nGroups)
	if group == nil {
		ev, ce := cnt[:span], cnt[span:2*span]
		for i, t := range time {
			if event[i] {
				ev[int(t)]++
			} else {
				ce[int(t)]++
			}
		}
	} else {
		for i, t := range time {
			off := 2 * span * group[i]
			if !event[i] {
				off += span
			}
			cnt[off+int(t)]++
		}
	}
	used := 0
	for k := 0; k < span; k++ {
		for g := 0; g < nGroups; g++ {
			off := 2 * span * g
			if cnt[off+k] != 0 || cnt[off+span+k] != 0 {
				used++
				break
			}
		}
	}
	tab := &kmTable{times: make([]float64, 0, used), nGroups: nGroups}
	tab.events = make([][]float64, nGroups)
	tab.censor = make([][]float64, nGroups)
	for g := range tab.events {
		tab.events[g] = make([]float64, 0, used)
		tab.censor[g] = make([]float64, 0, used)
	}
	for k := 0; k < span; k++ {
		any := false
		for g := 0; g < nGroups; g++ {
			off := 2 * span * g
			if cnt[off+k] != 0 || cnt[off+span+k] != 0 {
				any = true
				break
			}
		}
		if !any {
			continue
		}
		tab.times = append(tab.times, float64(k))
		for g := 0; g < nGroups; g++ {
			off := 2 * span * g
			tab.events[g] = append(tab.events[g], float64(cnt[off+k]))
			tab.censor[g] = append(tab.censor[g], float64(cnt[off+span+k]))
		}
	}
	return tab
}

func kmTabulateSorted(time []float64, event []bool, group []int, nGroups int) *kmTable {
	n := len(time)
	keys := make([]uint64, n)
	vals := make([]uint32, n) // group << 1 | event
	for i, t := range time {
		if t == 0 {
			t = 0 // turn -0 into +0
		}
		keys[i] = math.Float64bits(t) // order-preserving for t >= 0
		v := uint32(0)
		if group != nil {
			v = uint32(group[i]) << 1
		}
		if event[i] {
			v |= 1
		}
		vals[i] = v
	}
	keys, vals = kmRadixSort(keys, vals)
	distinct := 0
	for i := 0; i < n; i++ {
		if i == 0 || keys[i] != keys[i-1] {
			distinct++
		}
	}
	tab := &kmTable{nGroups: nGroups, times: make([]float64, distinct)}
	flat := make([]float64, 2*nGroups*distinct)
	tab.events = make([][]float64, nGroups)
	tab.censor = make([][]float64, nGroups)
	for g := 0; g < nGroups; g++ {
		tab.events[g] = flat[(2*g)*distinct : (2*g+1)*distinct]
		tab.censor[g] = flat[(2*g+1)*distinct : (2*g+2)*distinct]
	}
	row := -1
	for i := 0; i < n; i++ {
		if i == 0 || keys[i] != keys[i-1] {
			row++
			tab.times[row] = math.Float64frombits(keys[i])
		}
		v := vals[i]
		if v&1 == 1 {
			tab.events[v>>1][row]++
		} else {
			tab.censor[v>>1][row]++
		}
	}
	return tab
}

// kmRadixOrder returns the stable ascending order of keys.
func kmRadixOrder(keys []uint64) []uint32 {
	idx := make([]uint32, len(keys))
	for i := range idx {
		idx[i] = uint32(i)
	}
	_, idx = kmRadixSort(append([]uint64(nil), keys...), idx)
	return idx
}

// kmRadixSort sorts keys ascending, carrying vals along (stable LSD radix
// sort, 8 bits a pass, passes on constant bytes skipped). It may reuse the
// input slices and returns the sorted ones.
func kmRadixSort(keys []uint64, vals []uint32) ([]uint64, []uint32) {
	n := len(keys)
	if n < 2 {
		return keys, vals
	}
	k1, v1 := keys, vals
	k2 := make([]uint64, n)
	v2 := make([]uint32, n)
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		count = [256]int{}
		for _, k := range k1 {
			count[(k>>shift)&0xff]++
		}
		if count[(k1[0]>>shift)&0xff] == n {
			continue // every key has this byte: the pass is a no-op
		}
		sum := 0
		for b := range count {
			c := count[b]
			count[b] = sum
			sum += c
		}
		for j, k := range k1 {
			b := (k >> shift) & 0xff
			p := count[b]
			count[b]++
			k2[p] = k
			v2[p] = v1[j]
		}
		k1, k2 = k2, k1
		v1, v2 = v2, v1
	}
	return k1, v1
}
