package dp

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// MinKeyBytes is the shortest secret key accepted for the keyed PRF.
const MinKeyBytes = 32

// Field codes name the field a per-record draw is for; they are part of the
// PRF input so that two fields of one record never share randomness.
const (
	FieldPseudonym byte = 1
	FieldTime      byte = 2
	FieldCohort    byte = 3
	FieldProject   byte = 4
)

// PRF is the keyed pseudorandom function behind every per-record draw:
// AES-128-CMAC (NIST SP 800-38B) over an unambiguous encoding of
// (record id, field, mechanism version, input value). Its 128-bit output
// seeds a Stream (AES-128 in counter mode under a second derived key), a
// fast CSPRNG, so a mechanism can draw as many words as it needs. AES-128
// (10 rounds) rather than AES-256 keeps the per-record cost low; its
// 128-bit security is far beyond what a sanitized record is worth.
//
// The AES keys are derived from the configured secret with HMAC-SHA256, so any
// secret of at least MinKeyBytes random bytes may be used. A PRF is safe for
// concurrent use.
type PRF struct {
	mac    cipher.Block // CMAC key
	stream cipher.Block // CTR expansion key
	k1     [16]byte     // CMAC subkey for complete final blocks
}

// NewPRF derives the PRF keys from secret.
func NewPRF(secret []byte) (*PRF, error) {
	if len(secret) < MinKeyBytes {
		return nil, fmt.Errorf("prf key: need at least %d bytes, got %d", MinKeyBytes, len(secret))
	}
	derive := func(label string) []byte {
		h := hmac.New(sha256.New, secret)
		h.Write([]byte("dpsurv prf v1 " + label))
		return h.Sum(nil)
	}
	return newPRFFromKeys(derive("cmac")[:16], derive("ctr")[:16])
}

func newPRFFromKeys(macKey, ctrKey []byte) (*PRF, error) {
	mac, err := aes.NewCipher(macKey)
	if err != nil {
		return nil, fmt.Errorf("prf key: %w", err)
	}
	st, err := aes.NewCipher(ctrKey)
	if err != nil {
		return nil, fmt.Errorf("prf key: %w", err)
	}
	p := &PRF{mac: mac, stream: st}
	// CMAC subkey K1 = dbl(E_K(0^128)).
	var l [16]byte
	mac.Encrypt(l[:], l[:])
	p.k1 = dbl(l)
	return p, nil
}

func dbl(b [16]byte) [16]byte {
	var out [16]byte
	carry := b[0] >> 7
	for i := 0; i < 15; i++ {
		out[i] = b[i]<<1 | b[i+1]>>7
	}
	out[15] = b[15] << 1
	if carry == 1 {
		out[15] ^= 0x87
	}
	return out
}

// RecordState is the CMAC chaining state after the record-id prefix of the
// PRF input. Computing it once per record and then one block per field is
// exactly CMAC over the full message (the prefix is a whole number of
// blocks, and the per-field suffix is one complete final block).
//
// A RecordState holds its own scratch block so that reusing one across the
// records of a batch (Reset) allocates nothing per record.
type RecordState struct {
	p     *PRF
	state [16]byte
	blk   [16]byte
}

var errIDTooLong = errors.New("record id longer than 65535 bytes")

// Record absorbs the record id. The prefix is
// 0x01 (encoding version) || uint16 len(id) || id, zero-padded to a block
// boundary; the length prefix makes the padding unambiguous. Ids of up to 13
// bytes take one block.
func (p *PRF) Record(id string) (*RecordState, error) {
	rs := new(RecordState)
	if err := rs.Reset(p, id); err != nil {
		return nil, err
	}
	return rs, nil
}

// Reset makes rs the state of record id under p, reusing rs's memory.
func (rs *RecordState) Reset(p *PRF, id string) error {
	if len(id) > 0xffff {
		return errIDTooLong
	}
	rs.p = p
	rs.state = [16]byte{}
	blk := &rs.blk
	*blk = [16]byte{}
	blk[0] = 0x01
	binary.BigEndian.PutUint16(blk[1:3], uint16(len(id)))
	n := copy(blk[3:], id)
	id = id[n:]
	for {
		for i := range 16 {
			rs.state[i] ^= blk[i]
		}
		p.mac.Encrypt(rs.state[:], rs.state[:])
		if len(id) == 0 {
			break
		}
		*blk = [16]byte{}
		n = copy(blk[:], id)
		id = id[n:]
	}
	return nil
}

// Tag returns the 128-bit PRF output for (record, field, version, value) as
// two words.
func (rs *RecordState) Tag(field byte, version uint16, value uint64) (uint64, uint64) {
	blk := &rs.blk
	*blk = [16]byte{}
	blk[0] = field
	binary.BigEndian.PutUint16(blk[1:3], version)
	binary.BigEndian.PutUint64(blk[3:11], value)
	blk[15] = 0x80 // suffix marker, keeps the final block distinct from padding
	rs.p.cmacFinal(&rs.state, blk)
	return binary.LittleEndian.Uint64(blk[:8]), binary.LittleEndian.Uint64(blk[8:])
}

// cmacFinal turns blk into E(state XOR blk XOR K1): CMAC's last step for a
// complete final block.
func (p *PRF) cmacFinal(state, blk *[16]byte) {
	for i := range 16 {
		blk[i] ^= state[i] ^ p.k1[i]
	}
	p.mac.Encrypt(blk[:], blk[:])
}

// Stream returns a CSPRNG seeded by the PRF output for (record, field,
// version, value): it yields the two tag words, then AES-128-CTR blocks keyed
// by the stream key with the tag as the counter's nonce.
func (rs *RecordState) Stream(field byte, version uint16, value uint64) *Stream {
	a, b := rs.Tag(field, version, value)
	return &Stream{p: rs.p, seed: [2]uint64{a, b}}
}

// Stream is a deterministic CSPRNG derived from one PRF output. It
// implements Source.
type Stream struct {
	p    *PRF
	seed [2]uint64
	n    uint64 // words drawn so far
	buf  [2]uint64
	blk  [16]byte
}

// Uint64 returns the next word of the stream.
func (s *Stream) Uint64() uint64 {
	i := s.n
	s.n++
	if i < 2 {
		return s.seed[i]
	}
	j := i - 2
	if j%2 == 0 {
		blk := &s.blk
		binary.LittleEndian.PutUint64(blk[:8], s.seed[0])
		binary.LittleEndian.PutUint64(blk[8:], s.seed[1]^(j/2+1))
		s.p.stream.Encrypt(blk[:], blk[:])
		s.buf[0] = binary.LittleEndian.Uint64(blk[:8])
		s.buf[1] = binary.LittleEndian.Uint64(blk[8:])
	}
	return s.buf[j%2]
}
