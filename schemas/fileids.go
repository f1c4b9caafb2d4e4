package schemas

import (
	"encoding/binary"
	"hash/maphash"
)

// fileIDs is the file-wide set of claimed ids: an open-addressing table
// (load at most 3/4) of 8-byte slots, a 24-bit hash tag and the offset of
// the id's entry in an arena (the claiming row as 4 bytes, the id's length
// as a uvarint, the id's bytes). About 24 bytes per id of 9 bytes, and one
// hash per row.
type fileIDs struct {
	table []uint64 // tag<<40 | (offset+1); 0 is empty
	mask  uint64
	arena []byte
	n     int
}

const idOffBits = 40

// newFileIDs sizes the set for about rows ids.
func newFileIDs(rows int) *fileIDs {
	n := 1 << 12
	for 3*n < 4*rows && n < 1<<31 {
		n <<= 1
	}
	return &fileIDs{table: make([]uint64, n), mask: uint64(n - 1), arena: make([]byte, 0, min(rows, 1<<26)*16)}
}

// entry returns the row and id stored at arena offset off.
func (s *fileIDs) entry(off int) (int32, []byte) {
	row := int32(binary.LittleEndian.Uint32(s.arena[off:]))
	l, k := binary.Uvarint(s.arena[off+4:])
	start := off + 4 + k
	return row, s.arena[start : start+int(l)]
}

// claim returns the row that claimed id (hash h) first, or claims it for
// row.
func (s *fileIDs) claim(id string, h uint64, row int32) (int32, bool) {
	tag := h >> idOffBits << idOffBits
	for j := h & s.mask; ; j = (j + 1) & s.mask {
		x := s.table[j]
		if x == 0 {
			off := len(s.arena)
			s.arena = binary.LittleEndian.AppendUint32(s.arena, uint32(row))
			s.arena = binary.AppendUvarint(s.arena, uint64(len(id)))
			s.arena = append(s.arena, id...)
			s.table[j] = tag | uint64(off+1)
			s.n++
			if 4*s.n > 3*len(s.table) {
				s.rehash()
			}
			return row, false
		}
		if x>>idOffBits<<idOffBits == tag {
			if first, key := s.entry(int(x&(1<<idOffBits-1)) - 1); bstr(key) == id {
				return first, true
			}
		}
	}
}

func (s *fileIDs) rehash() {
	s.table = make([]uint64, 2*len(s.table))
	s.mask = uint64(len(s.table) - 1)
	for off := 0; off < len(s.arena); {
		_, key := s.entry(off)
		h := maphash.Bytes(dedupeSeed, key)
		j := h & s.mask
		for s.table[j] != 0 {
			j = (j + 1) & s.mask
		}
		s.table[j] = h>>idOffBits<<idOffBits | uint64(off+1)
		l, k := binary.Uvarint(s.arena[off+4:])
		off += 4 + k + int(l)
	}
}

// dedupe is scratch.dedupe with the file-wide set: only good rows claim
// ids; a later good row with a claimed id is a duplicate of the first.
// The parser hashed the good rows' ids (st.hashes), on its workers. The
// rows are claimed in the order of their table slots, not of the file (a
// stable counting sort on the slot's top bits, so rows of one id keep
// their file order and the first still claims it): the probes then sweep
// the table once instead of missing the cache at random.
func (s *fileIDs) dedupe(st *scratch, rowBase int) {
	const bits = 12
	shift := uint(0)
	for len(s.table)>>shift > 1<<bits {
		shift++
	}
	var count [1<<bits + 1]int32
	good := 0
	for i := 0; i < st.n; i++ {
		if st.reason[i] == rOK {
			count[(st.hashes[i]&s.mask)>>shift+1]++
			good++
		}
	}
	for k := 1; k < len(count); k++ {
		count[k] += count[k-1]
	}
	order := resize(st.keep, good)
	for i := 0; i < st.n; i++ {
		if st.reason[i] == rOK {
			k := (st.hashes[i] & s.mask) >> shift
			order[count[k]] = int32(i)
			count[k]++
		}
	}
	st.keep = order[:0]
	for _, i := range order {
		if first, dup := s.claim(st.ids[i], st.hashes[i], int32(rowBase)+i); dup {
			st.reason[i] = rDup
			st.slot[i] = slotID
			st.dupOf[i] = first
		}
	}
}
